package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
)

var _ list.ListResourceWithConfigure = &SnapshotListResource{}

// NewSnapshotListResource is the sandboxer_snapshot list resource constructor.
func NewSnapshotListResource() list.ListResource {
	return &SnapshotListResource{listBase{name: "_snapshot"}}
}

// SnapshotListResource lists sandboxer_snapshot instances: the manifests
// of the hosts' stores (list.go).
type SnapshotListResource struct {
	listBase
}

func (l *SnapshotListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	var m snapshotListModel
	diags := req.Config.Get(ctx, &m)
	stream.Results = hostListing[checkpoint.Summary]{
		what:   "Snapshots",
		read:   l.data.snapshotsOldestFirst,
		keep:   m.matches,
		result: func(host string, s checkpoint.Summary) list.ListResult { return l.result(ctx, req, host, s) },
	}.stream(ctx, l.data, req, m.Host, diags)
}

// result is one snapshot as a list result; its resource is what an import
// of it reads (SnapshotResource.ImportState, then Read).
func (l *SnapshotListResource) result(ctx context.Context, req list.ListRequest, host string, s checkpoint.Summary) list.ListResult {
	display := fmt.Sprintf("%s %q (sandbox %s on %s)", s.ID, s.Name, s.SandboxID, host)
	return listResult(ctx, req, host, s.ID, display, func(t timeouts.Value, diags *diag.Diagnostics) any {
		m := snapshotModel{
			captureArgs: captureArgs{Host: types.StringValue(host), Name: types.StringNull(), SandboxID: types.StringNull(),
				Quiesce: types.StringValue(backends.QuiesceNone), Volumes: types.ListNull(types.StringType)},
			ID: types.StringValue(s.ID), RetainOnDestroy: types.BoolValue(false), Timeouts: t,
		}
		m.fromSummary(ctx, s, diags)
		return &m
	})
}
