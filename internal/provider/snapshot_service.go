package provider

import (
	"context"
	"fmt"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// What sandboxer_snapshot does on hosts: the resource and the action
// capture through captureSnapshot, and hold its arguments to the same rules
// (validate); the resource also copies (copySnapshot).

// maxMetadataBytes bounds a snapshot's metadata (keys plus values).
const maxMetadataBytes = 10 * 1024

// validate holds a capture's arguments to the store's rules at plan time,
// before any host is contacted.
func (a *captureArgs) validate(ctx context.Context, diags *diag.Diagnostics) {
	validateSnapshotArgs(ctx, a.IncludePaths, a.ExcludePaths, a.Metadata, diags)
	validateVolumeArgs(a.IncludeVolumes, a.Volumes, diags)
}

// validateVolumeArgs refuses volumes named for a snapshot that takes none.
func validateVolumeArgs(include types.Bool, volumes types.List, diags *diag.Diagnostics) {
	if !include.IsNull() && !include.IsUnknown() && !include.ValueBool() && !volumes.IsNull() {
		diags.AddAttributeError(path.Root("volumes"), "Volumes Without include_volumes",
			"volumes names compose volumes to capture, but include_volumes = false captures none: remove one of them.")
	}
}

// validateSnapshotArgs holds a capture's paths and metadata to the
// store's rules. Unknown values are checked when they are known.
func validateSnapshotArgs(ctx context.Context, include, exclude types.List, metadata types.Map, diags *diag.Diagnostics) {
	if !include.IsUnknown() && !exclude.IsUnknown() {
		f := checkpoint.Filter{Include: stringList(ctx, include, diags), Exclude: stringList(ctx, exclude, diags)}
		if err := f.Validate(); err != nil {
			diags.AddAttributeError(path.Root("include_paths"), "Invalid Snapshot Paths", err.Error())
		}
	}
	if !metadata.IsUnknown() {
		size := 0
		for k, v := range stringMap(ctx, metadata, diags) {
			size += len(k) + len(v)
		}
		if size > maxMetadataBytes {
			diags.AddAttributeError(path.Root("metadata"), "Snapshot Metadata Too Large",
				fmt.Sprintf("metadata holds %d bytes; at most %d are allowed", size, maxMetadataBytes))
		}
	}
}

// captureSnapshot takes snapshot id of the sandbox a names, on the host
// holding it, and returns it with that host's name. A quiesce or
// include_volumes left unset is resolved in a to the sandbox profile's
// default, as the resource keeps it in state.
func captureSnapshot(ctx context.Context, d *providerData, a *captureArgs, id string) (checkpoint.Summary, string, error) {
	h, sb, err := d.locateSandbox(ctx, a.SandboxID.ValueString(), a.Host.ValueString())
	if err != nil {
		return checkpoint.Summary{}, "", err
	}
	profile := d.profileOf(sb)
	if a.Quiesce.IsUnknown() || a.Quiesce.IsNull() {
		a.Quiesce = types.StringValue(backends.DefaultQuiesce(profile))
	}
	if a.IncludeVolumes.IsUnknown() || a.IncludeVolumes.IsNull() {
		a.IncludeVolumes = types.BoolValue(backends.DefaultIncludeVolumes(profile))
	}
	var diags diag.Diagnostics
	s, err := d.registry.Snapshot(ctx, h, backends.SnapshotRequest{
		ID:          id,
		SandboxID:   sb.ID,
		Name:        a.Name.ValueString(),
		Description: a.Description.ValueString(),
		Metadata:    stringMap(ctx, a.Metadata, &diags),
		Filter: checkpoint.Filter{
			Include: stringList(ctx, a.IncludePaths, &diags),
			Exclude: stringList(ctx, a.ExcludePaths, &diags),
		},
		IncludeEnv:     a.IncludeEnv.ValueBool(),
		Quiesce:        a.Quiesce.ValueString(),
		IncludeVolumes: a.IncludeVolumes.ValueBoolPointer(),
		Volumes:        volumeList(ctx, a.Volumes, &diags),
		Profile:        profile,
		Sandbox:        sb,
	})
	if diags.HasError() {
		return s, h.Host(), fmt.Errorf("invalid snapshot arguments: %v", diags)
	}
	if err != nil {
		return s, h.Host(), fmt.Errorf("sandbox %s on host %q: %w", sb.ID, h.Host(), err)
	}
	return s, h.Host(), nil
}

// copySnapshot copies snapshot src as id, named name, to the host named
// dstName (default: src's host), and returns the copy with its host's name.
func copySnapshot(ctx context.Context, d *providerData, src, dstName, id, name string) (checkpoint.Summary, string, error) {
	srcHost, _, err := d.locateSnapshot(ctx, src, "")
	if err != nil {
		return checkpoint.Summary{}, "", err
	}
	dst := srcHost
	if dstName != "" {
		if dst, err = d.host(dstName); err != nil {
			return checkpoint.Summary{}, "", err
		}
	}
	s, err := d.registry.CopySnapshot(ctx, srcHost, src, dst, id, name)
	if err != nil {
		return s, dst.Host(), fmt.Errorf("copy of snapshot %s from host %q to host %q: %w", src, srcHost.Host(), dst.Host(), err)
	}
	return s, dst.Host(), nil
}

// snapshotsOldestFirst lists the snapshots in h's store, oldest first.
func (d *providerData) snapshotsOldestFirst(ctx context.Context, h *hosts.Host) ([]checkpoint.Summary, error) {
	found, err := d.registry.ListSnapshots(ctx, h)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].CreatedAt.Before(found[j].CreatedAt) })
	return found, nil
}

// profileOf is the catalog's profile of an existing sandbox; nil when the
// profile is no longer in the catalog (its snapshots then use no profile
// limits and quiesce none).
func (d *providerData) profileOf(sb *backends.Sandbox) *catalog.Profile {
	p, err := d.catalog.Get(sb.Profile)
	if err != nil {
		return nil
	}
	return p
}

// volumeList is the volumes argument: nil (every volume) when unset.
func volumeList(ctx context.Context, v types.List, diags *diag.Diagnostics) []string {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	return stringList(ctx, v, diags)
}
