// Package safepath is the one place user-supplied paths are checked before
// they reach a host: no parent-directory steps, no absolute escapes.
package safepath

import (
	"fmt"
	"os"
	"strings"
)

// Relative checks that p is a relative path that stays inside the directory
// it is joined to (a workspace, a repo): not absolute, no ".." element.
func Relative(p string) error {
	if p == "" {
		return fmt.Errorf("path is empty")
	}
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		return fmt.Errorf("path %q is absolute; give a path relative to the workspace", p)
	}
	if strings.ContainsRune(p, 0) {
		return fmt.Errorf("path %q contains a NUL byte", p)
	}
	if hasDotDot(p) {
		return fmt.Errorf("path %q contains \"..\"; paths may not leave the workspace", p)
	}
	return nil
}

// NoParentSteps checks that p (absolute or relative) has no ".." element,
// so what it names is what it reads as.
func NoParentSteps(p string) error {
	if hasDotDot(p) {
		return fmt.Errorf("path %q contains \"..\"; write it without parent-directory steps (Terraform's abspath() resolves them)", p)
	}
	return nil
}

func hasDotDot(p string) bool {
	for _, elem := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if elem == ".." {
			return true
		}
	}
	return false
}

// ExpandHome expands a leading "~" or "~/" in a path on the machine running
// Terraform to the home directory of the user running it, as ssh does for
// its key and known_hosts files. "~user/..." is left alone (ssh's own
// expansion of it depends on the system's user database).
func ExpandHome(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot expand %q: %w", p, err)
	}
	return home + p[1:], nil
}
