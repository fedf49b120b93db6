package backends

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/agent"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Refresh is read per host, not per resource. A plan refreshes every
// sandbox in state at once; read one by one, each costs a record read and a
// status command on its host, so a plan of 50 sandboxes costs 100 commands.
// Instead, the first refresh of a host reads the records of all its
// sandboxes, the names in its root directory and, per extension, the status
// of all its sandboxes in one command (a host view); refreshes of that host
// that start while it is read, or shortly after, are answered from it.
//
// A host view lives in this provider process for readBatchWindow after it
// was read, and any change this registry makes on the host drops it: it is
// a batch of reads that happen together, never a cache across operations
// (Terraform starts a new provider process for each plan and apply anyway).

// readBatchWindow is how long a host view answers refreshes that start
// after it was read: long enough for the refreshes Terraform issues
// together (its parallelism admits the next ones as earlier ones finish),
// short enough that nothing reads an older state than a refresh would.
const readBatchWindow = 2 * time.Second

// BatchInspector is an Extension whose sandboxes' statuses can be read for
// a whole host at once.
type BatchInspector interface {
	// HostStatusScript is a command printing what StatusFrom needs for
	// every sandbox of the extension on h; "" when it needs nothing but
	// whether each workspace exists. It must only read.
	HostStatusScript(ctx context.Context, h *hosts.Host) (string, error)
	// StatusFrom is sb's status, given the script's output and whether its
	// workspace exists; as Inspect would have returned it.
	StatusFrom(out string, workspace bool, sb *Sandbox) Status
}

// hostView is what one command read of a host (readHost), or of one record
// (readRecordData: root and that record alone).
type hostView struct {
	root    string            // the resolved root directory
	records map[string][]byte // sandbox id -> its record, as read
	names   map[string]bool   // names in the root directory
	ext     map[string]string // extension -> its status script's output; absent when it failed
	noRoot  bool              // the root directory does not exist (nothing else is set)
}

// invalidateReads drops h's views and records: called after anything this
// registry changes on h.
func (r *Registry) invalidateReads(ctx context.Context, h *hosts.Host) {
	host := func(key string) bool { return key == h.Host() }
	r.reads.Invalidate(ctx, host)
	r.snapReads.Invalidate(ctx, host)
	r.recordReads.Invalidate(ctx, func(key recordKey) bool { return key.host == h.Host() })
}

// recordKey is a sandbox's record on a host.
type recordKey struct{ host, id string }

// Sandbox reads a sandbox's record (ErrNotFound when the host has none).
// Lookups are answered with the reads made together with them: from the
// host view when one is being read or was just read (a plan's refreshes,
// then the plans of the snapshots that locate their sandboxes), else from
// one read of the record shared by the lookups of the same sandbox (an
// apply's last plan of a snapshot, then its create).
func (r *Registry) Sandbox(ctx context.Context, h *hosts.Host, id string) (*Sandbox, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	view, ok, err := r.reads.Peek(ctx, h.Host())
	if !ok || err != nil || view.noRoot {
		view, err = r.recordReads.Do(ctx, recordKey{h.Host(), id}, func(ctx context.Context) (*hostView, error) { return readRecordData(ctx, h, id) })
		if err != nil {
			return nil, err
		}
	}
	data, found := view.records[id]
	if !found {
		return nil, ErrNotFound
	}
	return decodeRecord(h, id, data, view.root)
}

// Refresh is Get for a refresh: the same sandbox and status, answered from
// a host view shared with the other refreshes of the same host.
func (r *Registry) Refresh(ctx context.Context, h *hosts.Host, id string) (*Sandbox, Status, error) {
	if err := CheckID(id); err != nil {
		return nil, Status{}, err
	}
	view, err := r.view(ctx, h)
	if err != nil {
		return nil, Status{}, err
	}
	if view.noRoot {
		// A sandbox in state whose host has no root directory at all: the
		// host block may name the wrong one; never a reason to plan its
		// replacement.
		return nil, Status{}, fmt.Errorf("unable to read the sandboxes of host %q: root directory %s does not exist", h.Host(), h.RootDir)
	}
	data, ok := view.records[id]
	if !ok {
		return nil, Status{}, ErrNotFound
	}
	sb, err := decodeRecord(h, id, data, view.root)
	if err != nil {
		return nil, Status{}, err
	}
	ext, err := r.Extension(sb.Extension)
	if err != nil {
		return nil, Status{}, err
	}
	st, err := r.statusIn(ctx, h, view, ext, sb)
	return sb, st, err
}

// view is h's host view, read now or shared with the reads in flight.
func (r *Registry) view(ctx context.Context, h *hosts.Host) (*hostView, error) {
	return r.reads.Do(ctx, h.Host(), func(ctx context.Context) (*hostView, error) { return r.readHost(ctx, h) })
}

// statusIn is sb's status as its extension's Inspect would return it,
// taken from the view when the view holds it.
func (r *Registry) statusIn(ctx context.Context, h *hosts.Host, view *hostView, ext Extension, sb *Sandbox) (Status, error) {
	// The view knows whether a workspace exists only for one directly in
	// the root; another (a vm-packer workspace_base) is asked for itself.
	name := path.Base(sb.WorkspaceDir)
	bi, batch := ext.(BatchInspector)
	out, read := view.ext[sb.Extension]
	if !batch || !read || sb.WorkspaceDir != strings.TrimSuffix(view.root, "/")+"/"+name {
		return ext.Inspect(ctx, h, sb)
	}
	return bi.StatusFrom(out, view.names[name], sb), nil
}

// RefreshSnapshot is GetSnapshot for a refresh: the manifests of the
// host's store are read once for the refreshes that start together, and
// each snapshot's is verified when it is asked for.
func (r *Registry) RefreshSnapshot(ctx context.Context, h *hosts.Host, id string) (checkpoint.Summary, error) {
	ms, err := r.snapReads.Do(ctx, h.Host(), func(ctx context.Context) (*agent.Manifests, error) { return r.agent.ReadManifests(ctx, h) })
	if err != nil {
		return checkpoint.Summary{}, err
	}
	return ms.Get(id)
}

// The host view's sections (hosts.Ask) and its named result.
const (
	viewRoot   = "root"    // the resolved root directory
	viewRecord = "record"  // a record; arg: its sandbox id
	viewExt    = "ext"     // an extension's status script's output, if it succeeded; arg: its name
	viewNames  = "names"   // the names in the root directory, one a line
	viewNoRoot = "no-root" // result: the root directory does not exist
)

// recordsScript is the host view's part reading the records among files
// (sh words) and the resolved root directory; readRecordData's for one file.
// A record is opened before its section is announced: one removed since the
// listing (a teardown beside the read) does not open and is skipped as
// gone, where reading it by name failed the whole view, and with it a
// destroy of 50 sandboxes. What is there but no regular file (a fifo
// would block the read) is skipped as before. The open's own complaint
// is dropped; cat's is kept (descriptor 4).
func recordsScript(m hosts.Mark, h *hosts.Host, files string) string {
	return fmt.Sprintf(`root=%s; [ -e "$root" ] || %s; %s; (cd -- "$root" && pwd -P) || exit 1; `+
		`for f in %s; do [ ! -e "$f" ] || [ -f "$f" ] || continue; n=${f##*/}; `+
		`{ %s; cat 2>&4; } 4>&2 2>/dev/null <"$f" || [ ! -e "$f" ] || exit 1; done`,
		hosts.Quote(h.RootDir), m.Result(viewNoRoot), m.Section(viewRoot, ""), files, m.Section(viewRecord, `"${n%.json}"`))
}

// readHost reads h's view in one command.
func (r *Registry) readHost(ctx context.Context, h *hosts.Host) (*hostView, error) {
	reply, err := hosts.Ask(ctx, h, func(m hosts.Mark) string {
		var script strings.Builder
		script.WriteString(recordsScript(m, h, allRecordFiles(h)))
		for _, name := range slices.Sorted(maps.Keys(r.exts)) {
			bi, ok := r.exts[name].(BatchInspector)
			if !ok {
				continue
			}
			s, err := bi.HostStatusScript(ctx, h)
			if err != nil {
				continue // its sandboxes are inspected one by one, which reports the error
			}
			// Held until complete (a failed script has no section); "$( (" is not "$((".
			fmt.Fprintf(&script, `; if out=$( %s ); then %s; printf '%%s\n' "$out"; fi`, cmp.Or(s, "true"), m.Section(viewExt, hosts.Quote(name)))
		}
		fmt.Fprintf(&script, `; %s; ls -1A -- "$root"`, m.Section(viewNames, ""))
		return script.String()
	})
	if err != nil {
		return nil, fmt.Errorf("unable to read the sandboxes of host %q: %w", h.Host(), err)
	}
	return parseHostView(reply)
}

// parseHostView reads readHost's answer.
func parseHostView(reply hosts.Reply) (*hostView, error) {
	if reply.Result == viewNoRoot {
		return &hostView{noRoot: true}, nil
	}
	v := &hostView{records: map[string][]byte{}, names: map[string]bool{}, ext: map[string]string{}}
	for _, s := range reply.Sections {
		switch s.Kind {
		case viewRoot:
			v.root = strings.TrimSuffix(string(s.Body), "\n")
		case viewRecord:
			v.records[s.Arg] = s.Body
		case viewExt:
			v.ext[s.Arg] = string(s.Body)
		case viewNames:
			for line := range strings.Lines(string(s.Body)) {
				v.names[strings.TrimSuffix(line, "\n")] = true
			}
		}
	}
	if !strings.HasPrefix(v.root, "/") {
		return nil, fmt.Errorf("unable to resolve the root directory")
	}
	return v, nil
}
