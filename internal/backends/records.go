package backends

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Records live under <root_dir>/.sandboxer/sandboxes/<id>.json on each host.
// They are what makes a host self-describing: Read, import and inventory
// need nothing but the host.
func recordPath(h *hosts.Host, id string) string {
	return h.Path(".sandboxer", "sandboxes", id+".json")
}

// vmPackerExtension is ext.vm-packer's catalog name (vmattach.Name, which
// this package cannot import): its workspaces may live under the profile's
// workspace_base, outside the root directory.
const vmPackerExtension = "ext.vm-packer"

// writeRecord writes sb's record by a command of its own, in one of the
// connection's shells (one round trip), even while the shells are busy
// and the sftp channel idle: a write there costs four.
func writeRecord(ctx context.Context, h *hosts.Host, sb *Sandbox) error {
	p := &Pending{h: h}
	p.addRecord(sb)
	return p.Flush(ctx)
}

// readRecord reads a record and refuses one that is not trustworthy (see
// checkRecord): whoever can write the host's files could otherwise aim
// teardown at anything. The root directory is resolved in the same command,
// so the check costs no extra round trip even when root_dir is relative to
// the SSH user's home.
func readRecord(ctx context.Context, h *hosts.Host, id string) (*Sandbox, error) {
	v, err := readRecordData(ctx, h, id)
	if err != nil {
		return nil, err
	}
	return decodeRecord(h, id, v.records[id], v.root)
}

// allRecordFiles is every record file of h, as sh words (a glob).
func allRecordFiles(h *hosts.Host) string {
	return hosts.Quote(h.Path(".sandboxer", "sandboxes")) + "/*.json"
}

// readRecords reads every record of h as it is, with the resolved root
// directory, in one command: a host view of its records alone.
func readRecords(ctx context.Context, h *hosts.Host) (*hostView, error) {
	v, err := readRecordFiles(ctx, h, allRecordFiles(h))
	if err != nil {
		return nil, fmt.Errorf("unable to read the sandboxes of host %q: %w", h.Host(), err)
	}
	return v, nil
}

// readRecordData reads record <id>.json of h as it is, with the resolved
// root directory: a host view of that record alone (ErrNotFound when the
// host has no such record).
func readRecordData(ctx context.Context, h *hosts.Host, id string) (*hostView, error) {
	v, err := readRecordFiles(ctx, h, hosts.Quote(recordPath(h, id)))
	if err != nil {
		return nil, err
	}
	if _, ok := v.records[id]; !ok {
		return nil, ErrNotFound
	}
	return v, nil
}

// readRecordFiles reads the records among files (sh words) and the
// resolved root directory in one command.
func readRecordFiles(ctx context.Context, h *hosts.Host, files string) (*hostView, error) {
	reply, err := hosts.Ask(ctx, h, func(m hosts.Mark) string { return recordsScript(m, h, files) })
	if err != nil {
		return nil, err
	}
	v, err := parseHostView(reply)
	if err != nil {
		return nil, fmt.Errorf("host %q, root directory %s: %w", h.Host(), h.RootDir, err)
	}
	return v, nil
}

// decodeRecord decodes record <id>.json of h, read together with the
// resolved root directory, and refuses it unless checkRecord trusts it.
func decodeRecord(h *hosts.Host, id string, data []byte, root string) (*Sandbox, error) {
	p := recordPath(h, id)
	var sb Sandbox
	if err := json.Unmarshal(data, &sb); err != nil {
		return nil, fmt.Errorf("host %q: sandbox record %s is corrupt: %w", h.Host(), p, err)
	}
	if err := checkRecord(&sb, id, root); err != nil {
		return nil, fmt.Errorf("host %q: refusing sandbox record %s: %w", h.Host(), p, err)
	}
	return &sb, nil
}

// checkRecord says whether the record read from <id>.json can be acted on:
// its id is the file's and a valid id, and its workspace is one a sandbox
// of that id could have (workspaceAllowed).
func checkRecord(sb *Sandbox, id, root string) error {
	if sb.ID != id {
		return fmt.Errorf("its id %q is not its file name's %q", sb.ID, id)
	}
	if err := CheckID(sb.ID); err != nil {
		return err
	}
	if sb.WorkspaceDir == "" {
		return nil // nothing will be removed
	}
	return workspaceAllowed(sb.WorkspaceDir, root, sb.ID, sb.Extension == vmPackerExtension)
}

// workspaceAllowed is the rule for a sandbox's workspace ws, given the
// host's resolved (absolute, symlink-free) root directory:
//   - ws is absolute and clean (no "..", ".", "//" or trailing "/");
//   - its last element is id, or sbx-<id> (ext.vm-packer's name);
//   - it lies inside root, not in root/.sandboxer (the provider's own state);
//   - except that an ext.vm-packer workspace named sbx-<id> may lie under a
//     profile's workspace_base, which neither the record nor the host
//     knows: then it must merely not be "/", the root or one of the root's
//     ancestors.
func workspaceAllowed(ws, root, id string, vmPacker bool) error {
	if !strings.HasPrefix(ws, "/") || path.Clean(ws) != ws {
		return fmt.Errorf("workspace %q is not a clean absolute path", ws)
	}
	name := path.Base(ws)
	if name != id && name != "sbx-"+id {
		return fmt.Errorf("workspace %s is not named %s or sbx-%s", ws, id, id)
	}
	if root != "" {
		if !strings.HasPrefix(root, "/") || path.Clean(root) != root {
			return fmt.Errorf("root directory %q is not a clean absolute path", root)
		}
		inside := root == "/" || strings.HasPrefix(ws, root+"/")
		if inside && !strings.HasPrefix(ws, strings.TrimSuffix(root, "/")+"/.sandboxer/") {
			return nil
		}
		if vmPacker && name == "sbx-"+id && ws != root && !strings.HasPrefix(root+"/", ws+"/") && !inside {
			return nil
		}
		return fmt.Errorf("workspace %s is not a sandbox directory inside root directory %s", ws, root)
	}
	return nil
}

// removeRecord removes a record and what interrupted writes of it left
// beside it (hosts.Upload writes through <record>.tmp.<random>, removed
// only when the write ends: a connection lost midway leaves it).
func removeRecord(ctx context.Context, h *hosts.Host, id string) error {
	return h.Run(ctx, removeRecordScript(h, id), nil, nil)
}

// removeRecordScript removes record id and what a write of it cut off
// left (its temporary files).
func removeRecordScript(h *hosts.Host, id string) string {
	p := hosts.Quote(recordPath(h, id))
	return "rm -f -- " + p + "; rm -rf -- " + p + ".tmp.*"
}
