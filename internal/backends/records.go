package backends

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Records live under <root_dir>/.sandboxer/sandboxes/<id>.json on each host.
// They are what makes a host self-describing: Read, import and inventory
// need nothing but the host.
func recordPath(h *hosts.Host, id string) string {
	return h.Path(".sandboxer", "sandboxes", id+".json")
}

// recordMissingExit is the exit code readRecord's script uses for "no record".
const recordMissingExit = 44

func writeRecord(ctx context.Context, h *hosts.Host, sb *Sandbox) error {
	data, err := json.MarshalIndent(sb, "", "  ")
	if err != nil {
		return err
	}
	return hosts.WriteFile(ctx, h, recordPath(h, sb.ID), append(data, '\n'), 0o600)
}

func readRecord(ctx context.Context, h *hosts.Host, id string) (*Sandbox, error) {
	p := recordPath(h, id)
	out, err := hosts.Output(ctx, h, fmt.Sprintf("[ -f %[1]s ] || exit %[2]d; cat %[1]s", hosts.Quote(p), recordMissingExit))
	if hosts.IsExitCode(err, recordMissingExit) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var sb Sandbox
	if err := json.Unmarshal(out, &sb); err != nil {
		return nil, fmt.Errorf("host %q: sandbox record %s is corrupt: %w", h.Host(), p, err)
	}
	return &sb, nil
}

func removeRecord(ctx context.Context, h *hosts.Host, id string) error {
	return h.Run(ctx, "rm -f -- "+hosts.Quote(recordPath(h, id)), nil, nil)
}
