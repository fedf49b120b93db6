package hosts

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-log/tflogtest"
)

// Every command a Host runs is logged at DEBUG with the host, the command
// and its duration, and a failure with its error: users see where an
// apply's time goes with TF_LOG_PROVIDER=DEBUG.
func TestHostRunLogsCommandAndDuration(t *testing.T) {
	var buf bytes.Buffer
	ctx := tflogtest.RootLogger(context.Background(), &buf)
	h := &Host{Transport: &Local{Name: "build"}, RootDir: t.TempDir(), Local: true}
	if err := h.Run(ctx, "true;\n  echo   hi", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := h.Run(ctx, "exit 3", nil, nil); err == nil {
		t.Fatal("exit 3 succeeded")
	}
	entries, err := tflogtest.MultilineJSONDecode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("got %d log entries, want 2: %s", len(entries), buf.String())
	}
	for i, want := range []string{"true; echo hi", "exit 3"} {
		e := entries[i]
		if e["@message"] != "host command" || e["host"] != "build" || e["command"] != want || e["@level"] != "debug" {
			raw, _ := json.Marshal(e)
			t.Errorf("entry %d: %s", i, raw)
		}
		if _, ok := e["duration_ms"].(float64); !ok {
			t.Errorf("entry %d has no duration_ms", i)
		}
	}
	if msg, _ := entries[1]["error"].(string); !strings.Contains(msg, "exit status 3") && !strings.Contains(msg, "3") {
		t.Errorf("the failed command's entry has no error: %v", entries[1])
	}
	if got := commandName(strings.Repeat("x", 500)); len(got) != commandLogBytes+3 {
		t.Errorf("a long command is logged with %d bytes", len(got))
	}
}
