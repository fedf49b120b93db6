package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-plugin-testing/statecheck"
)

// secretAbsentFromShowJSON is a state check: the value appears nowhere in
// what `show -json` prints of the state.
type secretAbsentFromShowJSON struct{ secret string }

func (c secretAbsentFromShowJSON) CheckState(_ context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	raw, err := json.Marshal(req.State)
	if err != nil {
		resp.Error = err
		return
	}
	if strings.Contains(string(raw), c.secret) {
		resp.Error = fmt.Errorf("show -json of the state contains the write-only value")
	}
}

// secretNowhere walks directories (the CLI's working directories with their
// state and plan files, a host's record directory) and fails on any file
// holding the secret, except configuration files, which are where it comes from.
func secretNowhere(secret string, dirs ...string) error {
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(p, ".tf") || strings.HasSuffix(p, ".tf.json") {
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 {
				return nil
			}
			data, err := os.ReadFile(p) //nolint:gosec // G122: the test's own directories, nothing swaps them
			if err != nil {
				return err
			}
			if strings.Contains(string(data), secret) {
				return fmt.Errorf("%s holds the write-only value", p)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
