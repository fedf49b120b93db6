package backends

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"weak"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/composefile"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/safepath"
)

// Helpers every directory-based extension shares: create an isolated
// workspace, fill it, and remove it again.

// WorkspaceDir is the path a new workspace base/name will have: base is
// created if missing and resolved on the host (absolute, no symlinks), and
// nothing of the sandbox is made. Knowing it first lets the host record be
// written before the workspace exists, so that nothing a create makes is
// ever unrecorded.
//
// A base is resolved once per host and provider process (the creates of
// one apply share it): where a root directory leads does not change while
// an apply runs, and a base removed meanwhile fails the workspace's mkdir.
func WorkspaceDir(ctx context.Context, h *hosts.Host, base, name string) (string, error) {
	key := baseKey(ctx, h, base)
	dir, err := resolvedBases.Do(ctx, key, func(ctx context.Context) (string, error) {
		out, err := hosts.Output(ctx, h, BaseScript(base))
		if err != nil {
			return "", fmt.Errorf("unable to create the directory %s for workspaces: %w", base, err)
		}
		return resolvedBase(out), nil
	})
	if err != nil {
		return "", err
	}
	return dir + "/" + name, nil
}

// BaseScript creates base if missing and prints it as the host resolves it:
// WorkspaceDir's command, for an extension to ask within one of its own
// (KeepBase).
func BaseScript(base string) string {
	return fmt.Sprintf("mkdir -p -- %[1]s && cd -- %[1]s && pwd -P", hosts.Quote(base))
}

func resolvedBase(out []byte) string { return strings.TrimSuffix(strings.TrimSpace(string(out)), "/") }

// BaseKnown reports whether WorkspaceDir has base of h resolved already
// (or is at it).
func BaseKnown(ctx context.Context, h *hosts.Host, base string) bool {
	_, ok, err := resolvedBases.Peek(ctx, resolvedKey{weak.Make(h), base})
	return ok && err == nil
}

// KeepBase keeps out, what BaseScript(base) printed on h within another
// command, as WorkspaceDir's answer for base.
func KeepBase(ctx context.Context, h *hosts.Host, base string, out []byte) {
	_, _ = resolvedBases.Do(ctx, baseKey(ctx, h, base), func(context.Context) (string, error) { // never fails
		return resolvedBase(out), nil
	})
}

// baseKey is base's key for h; a new resolution first drops the entries
// of hosts no longer configured.
func baseKey(ctx context.Context, h *hosts.Host, base string) resolvedKey {
	key := resolvedKey{weak.Make(h), base}
	if _, ok, _ := resolvedBases.Peek(ctx, key); !ok {
		resolvedBases.Invalidate(ctx, func(k resolvedKey) bool { return k.h.Value() == nil })
	}
	return key
}

// resolvedBases are the base directories as their hosts resolved them
// (WorkspaceDir), keyed by the Host itself, weakly: a provider configured
// again (each Terraform run, each test step) resolves again, and a Host
// no configuration holds any more is not kept alive by this cache (its
// entries go with the next resolution).
var resolvedBases = Flight[resolvedKey, string]{What: "workspace base resolution", Keep: Forever}

type resolvedKey struct {
	h    weak.Pointer[hosts.Host]
	base string
}

func (k resolvedKey) String() string {
	if h := k.h.Value(); h != nil {
		return h.Host() + ":" + k.base
	}
	return "(a host no longer configured):" + k.base
}

// ErrWorkspaceExists is a new workspace's directory found existing: ids
// are fresh, so it is someone else's, and a create removes nothing of it.
var ErrWorkspaceExists = errors.New("the workspace directory exists already")

// makeWorkspace creates sb's workspace (a WorkspaceDir) and fills it
// before anything starts in it: the local repo directory (if any) is copied
// in by the same command, env (if any) is written as ws/.env readable by
// the owner only, then req.Fill (a restore) runs.
func makeWorkspace(ctx context.Context, req Request, sb *Sandbox) error {
	ws, repo := sb.WorkspaceDir, req.Inputs["repo"]
	// Made only while the sandbox's record exists: a command that outlives
	// its connection (killed client, lost network) and runs late cannot
	// make a workspace after a teardown removed it.
	guard := recordPath(req.Host, req.ID)
	if err := hosts.MakeDir(ctx, req.Host, ws, repo, guard); errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("unable to create workspace %s: %w", ws, ErrWorkspaceExists)
	} else if err != nil {
		if repo != "" {
			return fmt.Errorf("unable to create workspace %s from %s: %w", ws, repo, err)
		}
		return fmt.Errorf("unable to create workspace %s: %w", ws, err)
	}
	if len(req.Env) > 0 {
		if err := hosts.WriteFile(ctx, req.Host, ws+"/.env", []byte(DotEnv(req.Env)), 0o600); err != nil {
			return fmt.Errorf("unable to write the workspace .env: %w", err)
		}
	}
	if req.Fill != nil {
		return req.Fill(ctx, sb)
	}
	return nil
}

// RemoveWorkspace deletes ws, the workspace directory named name, and
// nothing else, whatever a record says: ws must pass workspaceAllowed (clean,
// absolute, last element name, inside h's root directory unless it is an
// sbx-<id> workspace under a profile's workspace_base). The host re-checks in
// the same script against the resolved root and removes name relative to
// its parent's directory once it has changed into it and verified with
// pwd -P that the parent has no symlink in it: a path swapped for a symlink
// between check and removal still cannot send rm -rf anywhere else.
func RemoveWorkspace(ctx context.Context, h *hosts.Host, ws, name string) error {
	script, err := RemoveWorkspaceScript(h, ws, name)
	if err != nil || script == "" {
		return err
	}
	if err := h.Run(ctx, script, nil, nil); err != nil {
		return fmt.Errorf("unable to remove workspace %s: %w", ws, err)
	}
	return nil
}

// RemoveWorkspaceScript is RemoveWorkspace's command, for a command of the
// caller's (as a subshell: it exits); empty when there is no workspace.
func RemoveWorkspaceScript(h *hosts.Host, ws, name string) (string, error) {
	if ws == "" {
		return "", nil
	}
	id, vmPacker := name, false
	if rest, ok := strings.CutPrefix(name, "sbx-"); ok {
		id, vmPacker = rest, true
	}
	if err := CheckID(name); err != nil || path.Base(ws) != name {
		return "", fmt.Errorf("refusing to remove %s: a workspace of sandbox %s must end in /%s", ws, id, name)
	}
	if err := workspaceAllowed(ws, "", id, vmPacker); err != nil {
		return "", fmt.Errorf("refusing to remove %s: %w", ws, err)
	}
	outside := "false"
	if vmPacker {
		outside = "true"
	}
	script := fmt.Sprintf(`r=$(cd -- %[1]s && pwd -P) || exit 1
cd -- %[2]s 2>/dev/null || exit 0
here=$(pwd -P)
refuse() { echo "refusing: $1" >&2; exit 1; }
[ "$here" = %[2]s ] || refuse "its parent resolves to $here"
case "$here/" in
"$r"/.sandboxer/*) refuse "it is inside $r/.sandboxer" ;;
"$r"/*) ;;
*)
	%[4]s || refuse "it is not inside root directory $r"
	case "$r/" in "$here"/%[3]s/*) refuse "it holds root directory $r" ;; esac
	;;
esac
rm -rf -- ./%[3]s`, hosts.Quote(h.RootDir), hosts.Quote(path.Dir(ws)), hosts.Quote(name), outside)
	return script, nil
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckEnv validates env names and values for a .env file.
func CheckEnv(env map[string]string) error {
	for k, v := range env {
		if !envNamePattern.MatchString(k) {
			return fmt.Errorf("env name %q is not a valid variable name (letters, digits and _, not starting with a digit)", k)
		}
		if strings.ContainsAny(v, "\n\r\x00") {
			return fmt.Errorf("env %s: values may not contain newlines or NUL bytes", k)
		}
	}
	return nil
}

// DotEnv renders env as a .env file, sorted by name.
func DotEnv(env map[string]string) string {
	names := slices.Sorted(maps.Keys(env))
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "%s=%s\n", k, env[k])
	}
	return b.String()
}

// RenderedFile is where a compose sandbox's rendered compose file
// (composefile.Isolate) is written: beside the compose file, so that
// relative paths, the .env and extends resolve as they do for the file
// itself, with compose v1 and v2 (and `docker stack deploy`) alike. Its
// name is reserved: checkpoints neither capture nor prune it.
func RenderedFile(composeFile string) string {
	return path.Dir(composeFile) + "/" + checkpoint.RenderedName
}

// ComposeFileOf is the compose file a sandbox's stack runs from, relative
// to its workspace: the rendered one when it has one.
func ComposeFileOf(sb *Sandbox) string {
	if sb.Rendered {
		return RenderedFile(sb.ComposeFile)
	}
	return sb.ComposeFile
}

// RestoredComposeFile finds the compose file in a workspace restored from a
// snapshot (only the host has it): name when given, else the first of the
// default names there. sb.ComposeFile is set to it. When resolve is set,
// the command it gives for the file found runs in the same round trip, and
// its output is returned (a failure of it is the file's).
func RestoredComposeFile(ctx context.Context, h *hosts.Host, sb *Sandbox, name string, resolve func(file string) string) ([]byte, error) {
	candidates := composefile.DefaultFiles
	if name != "" {
		if err := safepath.Relative(name); err != nil {
			return nil, fmt.Errorf("input compose_file: %w", err)
		}
		candidates = []string{name}
	}
	var script strings.Builder
	m := hosts.NewMark()
	for _, f := range candidates {
		then := "exit 0"
		if resolve != nil {
			then = resolve(f) + "; exit $?"
		}
		fmt.Fprintf(&script, "if test -f %s; then %s; %s; fi\n", hosts.Quote(sb.WorkspaceDir+"/"+f), m.Section(composeFileSection, hosts.Quote(f)), then)
	}
	script.WriteString(m.Result(noComposeFile))
	// Output, not Ask: an invalid file's name comes with its resolution's failure.
	out, err := hosts.Output(ctx, h, script.String())
	reply, perr := hosts.ParseReply(m, out)
	if err == nil && perr == nil && reply.Result == noComposeFile {
		return nil, fmt.Errorf("no compose file in the restored workspace (looked for %s)", strings.Join(candidates, ", "))
	}
	if err = errors.Join(err, perr); err != nil && len(reply.Sections) == 0 {
		return nil, err // nothing was found
	}
	var resolved []byte
	for _, s := range reply.Sections {
		sb.ComposeFile, resolved = s.Arg, s.Body
	}
	if err != nil {
		return nil, fmt.Errorf("compose file %s is not valid: %w", sb.ComposeFile, err)
	}
	return resolved, nil
}

// RestoredComposeFile's section (the file found, then what resolve printed) and result.
const composeFileSection, noComposeFile = "compose-file", "no-compose-file"
