package hosts

import (
	"context"
	"os/exec"
	"testing"
)

func TestQuoteRoundTripsThroughShell(t *testing.T) {
	inputs := []string{
		"", "plain", "with space", "it's", `"double"`, "$(touch /tmp/pwned)", "`id`",
		"a;b", "a|b", "a&&b", "*", "~root", "new\nline", "back\\slash", "$HOME", "-n",
	}
	for _, in := range inputs {
		out, err := exec.CommandContext(context.Background(), "sh", "-c", "printf %s "+Quote(in)).Output()
		if err != nil {
			t.Fatalf("sh failed for %q: %v", in, err)
		}
		if string(out) != in {
			t.Errorf("Quote(%q) came back as %q", in, out)
		}
	}
}

func TestCommandQuotesEveryWord(t *testing.T) {
	got := Command("docker", "compose", "-p", "a b", "it's")
	want := `docker compose -p 'a b' 'it'"'"'s'`
	if got != want {
		t.Fatalf("Command = %s, want %s", got, want)
	}
}
