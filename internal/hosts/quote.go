package hosts

import "strings"

// Quote returns s as one POSIX shell word. Everything that reaches a host's
// shell goes through Quote (or Command, which uses it), so user input such as
// inputs, labels and names can never be interpreted by the shell.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') &&
			!strings.ContainsRune("@%_+=:,./-", r) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// Command joins argv into a single shell command line, quoting every word.
func Command(argv ...string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = Quote(a)
	}
	return strings.Join(words, " ")
}
