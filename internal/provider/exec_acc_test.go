package provider

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// `terraform apply -invoke` of sandboxer_exec through the real CLI: the
// command's lines arrive while it runs (its second line waits for a file
// the test makes only once it has read the first); a non-zero exit names
// its code and last lines; a command past its timeout is gone from the
// container; sandboxer_logs shows the service's log; and nothing enters
// state but the sandbox.
func TestAccActions_exec(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	skipBelowNatives(t)
	tf := newDevCLI(t)
	h := newAccHost(t)
	repo := t.TempDir()
	must(t, os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte(`services:
  worker:
    image: `+testharness.Image(t)+`
    command: ["sh", "-c", "echo worker listening; trap 'exit 0' TERM; while true; do sleep 1; done"]
`), 0o644))
	work := tf.dir(devCLIHeader + h.providerConfig(t) + fmt.Sprintf(`
resource "sandboxer_sandbox" "s" {
  profile = "profile.compose-e2e"
  host    = "harness"
  inputs  = { repo = %q }
  ttl     = "1h"
}

action "sandboxer_extend" "more" {
  config {
    sandbox_id = sandboxer_sandbox.s.id
    by         = "2h"
  }
}

action "sandboxer_exec" "stream" {
  config {
    sandbox_id = sandboxer_sandbox.s.id
    service    = "worker"
    command    = ["sh", "-c", "echo line-one; while [ ! -e /tmp/go ]; do sleep 0.1; done; echo line-two"]
  }
}

action "sandboxer_exec" "fail" {
  config {
    sandbox_id = sandboxer_sandbox.s.id
    service    = "worker"
    command    = ["sh", "-c", "echo \"about to fail: $WHY\"; exit 7"]
    env        = { WHY = "on purpose" }
  }
}

action "sandboxer_logs" "all" {
  config {
    sandbox_id = sandboxer_sandbox.s.id
    tail       = 10
  }
}

action "sandboxer_exec" "slow" {
  config {
    sandbox_id = sandboxer_sandbox.s.id
    service    = "worker"
    command    = ["sh", "-c", "sleep 1001 & sleep 1002; wait"]
    timeout    = "2s"
  }
}
`, repo))
	tf.run(work, "apply", "-auto-approve")
	t.Cleanup(func() { tf.run(work, "destroy", "-auto-approve") })
	project := stateValue(t, tf.run(work, "state", "show", "sandboxer_sandbox.s"), "compose_project")
	container := hostSays(t, "docker ps -q --filter label=com.docker.compose.project="+project)

	cmd := tf.command(work, "apply", "-auto-approve", "-invoke=action.sandboxer_exec.stream")
	pipe, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = cmd.Stdout
	must(t, cmd.Start())
	lines := bufio.NewScanner(pipe)
	var seen []string
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if strings.Contains(lines.Text(), "line-one") {
			break
		}
	}
	if !strings.Contains(strings.Join(seen, "\n"), "line-one") {
		t.Fatalf("the first line never arrived:\n%s", strings.Join(seen, "\n"))
	}
	// The command is still waiting for /tmp/go: the line came as it ran.
	hostSays(t, "docker exec "+container+" touch /tmp/go")
	rest, _ := io.ReadAll(pipe)
	if err := cmd.Wait(); err != nil || !strings.Contains(string(rest), "line-two") {
		t.Fatalf("the invoke: %v\n%s\n%s", err, strings.Join(seen, "\n"), rest)
	}

	if out := tf.run(work, "apply", "-auto-approve", "-invoke=action.sandboxer_logs.all"); !strings.Contains(out, "worker | worker listening") {
		t.Fatalf("the logs action did not show the worker's log:\n%s", out)
	}

	out, err := tf.try(work, "apply", "-auto-approve", "-invoke=action.sandboxer_exec.fail")
	if err == nil || !strings.Contains(out, "exited with code 7") || !strings.Contains(out, "about to fail: on purpose") {
		t.Fatalf("a failing command: %v\n%s", err, out)
	}

	out, err = tf.try(work, "apply", "-auto-approve", "-invoke=action.sandboxer_exec.slow")
	if err == nil || !strings.Contains(out, "longer than its timeout (2s)") {
		t.Fatalf("a command past its timeout: %v\n%s", err, out)
	}
	if ps := hostSays(t, "docker exec "+container+" ps -o args"); strings.Contains(ps, "sleep 100") {
		t.Fatalf("processes of the command remain after its timeout:\n%s", ps)
	}
	// Extended without a plan; the plan after keeps the new expiry.
	before := stateValue(t, tf.run(work, "state", "show", "sandboxer_sandbox.s"), "expires_at")
	out = tf.run(work, "apply", "-auto-approve", "-invoke=action.sandboxer_extend.more")
	if !strings.Contains(out, "now expires at") {
		t.Fatalf("the extend action: %s", out)
	}
	if out := tf.run(work, "apply", "-auto-approve"); !strings.Contains(out, "No changes") {
		t.Fatalf("the apply after an extend:\n%s", out)
	}
	after := stateValue(t, tf.run(work, "state", "show", "sandboxer_sandbox.s"), "expires_at")
	b, _ := time.Parse(time.RFC3339, before)
	a, err := time.Parse(time.RFC3339, after)
	if err != nil || a.Sub(b) != 2*time.Hour {
		t.Fatalf("expires_at %s, then %s after extending by 2h (%v)", before, after, err)
	}
	if state := tf.run(work, "state", "list"); strings.TrimSpace(state) != "sandboxer_sandbox.s" {
		t.Errorf("state after the actions: %q", state)
	}
}

// stateValue is a top-level string attribute in `terraform state show`'s
// output.
func stateValue(t *testing.T, shown, name string) string {
	t.Helper()
	for _, line := range strings.Split(shown, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == name && f[1] == "=" {
			return strings.Trim(f[2], `"`)
		}
	}
	t.Fatalf("no %s in:\n%s", name, shown)
	return ""
}
