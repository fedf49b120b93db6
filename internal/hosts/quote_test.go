package hosts

import (
	"os/exec"
	"strings"
	"testing"
)

// Quote makes any string one word for sh, whatever it holds: printed back
// by the shell, it is exactly the input (NUL cannot be in a shell word).
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "plain", "a b", "'", "it's", `"`, "$(id)", "`id`", "\n", `\`, "%", "-n", "a'b'c", "}x'y",
		"${HOME}", "$HOME", "*", "~", "~root", "a;b", "a|b", "a&&b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, 0) {
			t.Skip("NUL cannot be part of a shell word")
		}
		out, err := exec.Command("sh", "-c", "printf %s "+Quote(s)).Output()
		if err != nil {
			t.Fatalf("sh -c printf %%s %s: %v", Quote(s), err)
		}
		if string(out) != s {
			t.Fatalf("Quote(%q) printed back as %q", s, out)
		}
	})
}

func TestCommandQuotesEveryWord(t *testing.T) {
	got := Command("docker", "compose", "-p", "a b", "it's")
	want := `docker compose -p 'a b' 'it'"'"'s'`
	if got != want {
		t.Fatalf("Command = %s, want %s", got, want)
	}
}

// Logs and diagnostics show a script's commands, paths and names, never
// the content a quoted word carries.
func TestShownHidesContent(t *testing.T) {
	content := "services:\n  db:\n    environment:\n      PASSWORD: it's-a-secret-" + strings.Repeat("x", 100) + "\n"
	script := "printf '%s' " + Quote(content) + " > " + Quote("/srv/sandboxer/ws/.sandboxer-compose.yml") + " && docker compose up -d"
	got := Shown(script)
	if strings.Contains(got, "secret") || strings.Contains(got, "PASSWORD") {
		t.Fatalf("Shown kept the content: %s", got)
	}
	for _, want := range []string{"printf '%s' '<", "bytes not shown>'", "/srv/sandboxer/ws/.sandboxer-compose.yml", "docker compose up -d"} {
		if !strings.Contains(got, want) {
			t.Errorf("Shown(...) = %s, lacks %q", got, want)
		}
	}
	err := &CommandError{Host: "h", Script: script, ExitCode: 1}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("a diagnostic shows the content: %s", err)
	}
	if commandName(script) == "" || strings.Contains(commandName(script), "secret") {
		t.Errorf("the log shows the content: %s", commandName(script))
	}
}
