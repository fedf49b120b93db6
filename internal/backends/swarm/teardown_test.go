package swarm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// stackContainers asks node n's engine itself for the stack's containers,
// as "id state" lines.
func stackContainers(t *testing.T, sw *testharness.Swarm, n int, stack string) []string {
	t.Helper()
	out, err := sw.Docker(n, "ps", "-a", "--filter", "label="+stackLabel+"="+stack, "--format", "{{.ID}} {{.State}}")
	if err != nil {
		t.Fatalf("node %d: docker ps: %v\n%s", n, err, out)
	}
	var list []string
	for line := range strings.Lines(out) {
		if line = strings.TrimSpace(line); line != "" {
			list = append(list, line)
		}
	}
	return list
}

// When Teardown returns, the manager lists nothing of the stack (no
// service, network or task on any node), no container of it runs on any
// node (each node's engine asked directly) and none is left on the
// manager's node. What the workers' agents have stopped they remove
// themselves once the manager deleted the tasks, unseen by the manager
// (removeStackScript): the test waits for that separately and reports
// what was left when Teardown returned.
func TestSwarmTeardownStopsEveryNode(t *testing.T) {
	sw := testharness.StartedSwarm(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	img := testharness.Image(t)
	// Four replicas, at most two per node: on two nodes at least, and so
	// on a worker.
	sb, h, _ := createStack(ctx, t, sw, "services:\n  web:\n    image: "+img+"\n    command: "+spin+
		"\n    deploy:\n      replicas: 4\n      placement:\n        max_replicas_per_node: 2\n", 0)
	stack := StackName(sb.ID)
	workers := 0
	for n := 2; n <= len(sw.Nodes); n++ {
		if len(stackContainers(t, sw, n, stack)) > 0 {
			workers++
		}
	}
	if workers == 0 {
		t.Fatal("no task of the stack runs on a worker: the test would prove nothing")
	}

	start := time.Now()
	if err := backends.NewRegistry(New()).Destroy(ctx, h, sb.ID); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)

	var stopped []string
	for n := 1; n <= len(sw.Nodes); n++ {
		for _, c := range stackContainers(t, sw, n, stack) {
			id, state, _ := strings.Cut(c, " ")
			switch {
			case n == 1:
				t.Errorf("node 1 (the manager): container %s (%s) is left", id, state)
			case state != "exited" && state != "dead" && state != "removing":
				t.Errorf("node %d: container %s is %s after Teardown returned", n, id, state)
			default:
				stopped = append(stopped, fmt.Sprintf("node %d: %s", n, id))
			}
		}
	}
	filter := "label=" + stackLabel + "=" + stack
	nodes, err := sw.Docker(1, "node", "ls", "-q")
	if err != nil {
		t.Fatalf("docker node ls: %v\n%s", err, nodes)
	}
	for _, k := range [][]string{{"service", "ls", "-q", "--filter", filter}, {"network", "ls", "-q", "--filter", filter},
		append([]string{"node", "ps", "-q", "--filter", filter}, strings.Fields(nodes)...)} {
		if out, err := sw.Docker(1, k...); err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("the manager, docker %s after Teardown: %q %v", strings.Join(k[:2], " "), out, err)
		}
	}
	t.Logf("Teardown took %s; stopped containers left on the workers then: %d %v", took.Round(time.Millisecond), len(stopped), stopped)

	// The workers' agents remove the stopped containers of the deleted
	// tasks: polled on each node's engine, bounded.
	deadline := time.Now().Add(30 * time.Second)
	for n := 2; n <= len(sw.Nodes); n++ {
		for left := stackContainers(t, sw, n, stack); len(left) > 0; left = stackContainers(t, sw, n, stack) {
			if time.Now().After(deadline) {
				t.Fatalf("node %d still has containers of the stack 30 s after Teardown: %v", n, left)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Logf("the workers had removed them %s after Teardown returned", time.Since(start.Add(took)).Round(100*time.Millisecond))
}

// A teardown its context cuts short fails naming what the manager still
// lists of the stack: here the task of a service whose container ignores
// SIGTERM and is given 30 s to stop.
func TestSwarmTeardownTimeoutNamesWhatRemains(t *testing.T) {
	sw := testharness.StartedSwarm(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sb, h, _ := createStack(ctx, t, sw, "services:\n  stubborn:\n    image: "+testharness.Image(t)+
		"\n    command: [\"sh\", \"-c\", \"trap '' TERM; while true; do sleep 1; done\"]\n    stop_grace_period: 30s\n", 0)
	// removeWaitFor leaves the script 3 s of this.
	short, cancelShort := context.WithTimeout(ctx, removeMargin+3*time.Second)
	defer cancelShort()
	err := New().Teardown(short, h, sb)
	if err == nil {
		t.Fatal("Teardown returned while the task was still stopping")
	}
	if short.Err() != nil {
		t.Fatalf("the context ended before the script said what remains: %v", err)
	}
	if want := ".1 (" + testharness.Image(t) + ") on "; !strings.Contains(err.Error(), want) {
		t.Fatalf("the error does not name the task (%q):\n%v", want, err)
	}
	t.Log(err)
}
