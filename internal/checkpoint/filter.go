package checkpoint

import (
	"fmt"
	"path"
	"strings"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/safepath"
)

// Filter decides which workspace paths a snapshot covers (its scope).
//
// Patterns are slash-separated and relative to the workspace, in a
// gitignore-like dialect: `*` and `?` match within one path element, `**`
// matches any number of elements, and a pattern without a slash matches an
// element at any depth (`node_modules`, `*.log`). A directory that matches
// takes its whole subtree with it.
type Filter struct {
	Include []string // empty: everything
	Exclude []string
}

// Validate rejects patterns that could name anything outside the workspace.
func (f Filter) Validate() error {
	for _, list := range [][]string{f.Include, f.Exclude} {
		for _, p := range list {
			if err := safepath.Relative(p); err != nil {
				return err
			}
			if _, err := path.Match(strings.ReplaceAll(p, "**", "*"), ""); err != nil {
				return fmt.Errorf("pattern %q: %w", p, err)
			}
		}
	}
	return nil
}

// ReservedPrefix starts the names of what the provider keeps in a
// workspace for itself: a restore's staging area (at the top), and
// RenderedName, a compose sandbox's rendered compose file (beside the
// compose file, in any directory). They are the sandbox's, not the
// user's: never captured, never pruned by a restore.
const ReservedPrefix = ".sandboxer-"

// RenderedName is the file name of a compose sandbox's rendered compose
// file.
const RenderedName = ReservedPrefix + "compose.yml"

// alwaysExcluded are never captured as files: the workspace .env is secret
// and captured (with include_env) as env; the reserved names are ours.
func alwaysExcluded(rel string) bool {
	return rel == ".env" || strings.HasPrefix(rel, stagingPrefix) || path.Base(rel) == RenderedName
}

// Excluded reports whether rel (a file or directory) is excluded.
func (f Filter) Excluded(rel string) bool {
	if alwaysExcluded(rel) {
		return true
	}
	for _, p := range f.Exclude {
		if matchesSelfOrParent(p, rel) {
			return true
		}
	}
	return false
}

// Included reports whether the file rel is in scope by the include list.
func (f Filter) Included(rel string) bool {
	if len(f.Include) == 0 {
		return true
	}
	for _, p := range f.Include {
		if matchesSelfOrParent(p, rel) {
			return true
		}
	}
	return false
}

// MayContain reports whether directory rel may hold included paths, so the
// walk can skip directories that cannot.
func (f Filter) MayContain(dir string) bool {
	if len(f.Include) == 0 || f.Included(dir) {
		return true
	}
	for _, p := range f.Include {
		if prefixCanMatch(strings.Split(clean(p), "/"), strings.Split(dir, "/")) {
			return true
		}
	}
	return false
}

// InScope reports whether the file rel is covered by the filter.
func (f Filter) InScope(rel string) bool {
	return f.Included(rel) && !f.Excluded(rel)
}

func clean(p string) string { return strings.TrimPrefix(path.Clean(p), "./") }

// matchesSelfOrParent: the pattern matches rel or one of its parent directories.
func matchesSelfOrParent(pattern, rel string) bool {
	pattern = clean(pattern)
	elems := strings.Split(rel, "/")
	if !strings.Contains(pattern, "/") {
		for _, e := range elems {
			if ok, _ := path.Match(pattern, e); ok {
				return true
			}
		}
		return false
	}
	pat := strings.Split(pattern, "/")
	for i := 1; i <= len(elems); i++ {
		if matchElems(pat, elems[:i]) {
			return true
		}
	}
	return false
}

// matchElems matches pattern elements against path elements, `**` spanning
// zero or more elements.
func matchElems(pat, elems []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(elems); i++ {
				if matchElems(pat[1:], elems[i:]) {
					return true
				}
			}
			return false
		}
		if len(elems) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], elems[0]); !ok {
			return false
		}
		pat, elems = pat[1:], elems[1:]
	}
	return len(elems) == 0
}

// prefixCanMatch: some path below dir could match pat.
func prefixCanMatch(pat, dir []string) bool {
	for i, d := range dir {
		if i >= len(pat) {
			return false
		}
		if pat[i] == "**" {
			return true
		}
		if ok, _ := path.Match(pat[i], d); !ok {
			return false
		}
	}
	return true
}
