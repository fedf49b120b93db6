package provider

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

// The soak's "Provider produced inconsistent result after apply" (30
// minutes, seed 20261129, rounds 34 and 138: .timings only, on the
// converging apply after an ssh-blackhole / ssh-reset): a start whose reply
// was cut off leaves the state saying desired_state = "stopped" (Update
// returned an error, so the prior state stays) while the host runs the
// stack, so the next refresh reads status "ready". The next plan keeps
// timings known (UseStateForUnknown; planServices marks them unknown only
// when the status is "stopped"). Update started the sandbox again because
// desired_state changed, and wrote the start's timings: not the planned,
// known ones. It now stops or starts only when the plan changes the status
// (stopsOrStarts).
func TestUnitInconsistent_startAfterCutStartKeepsPlannedTimings(t *testing.T) {
	ctx := context.Background()
	created := time.Date(2026, 11, 29, 0, 10, 0, 0, time.UTC)
	ready := created.Add(3 * time.Second)
	record := func(timings map[string]float64) *backends.Sandbox {
		return &backends.Sandbox{ID: "abcdefabcdef", Host: "soak", Profile: "profile.compose-checkpoint", Extension: "ext.compose-ssh",
			WorkspaceDir: "/w/abcdefabcdef", ComposeProject: "sbx-abcdefabcdef", CreatedAt: created, ReadyAt: &ready,
			Services: []string{"db"}, Labels: map[string]string{"slot": "s1"}, Timings: timings}
	}
	running := backends.Status{State: backends.StatusReady, Services: []backends.ServiceState{{Name: "db", State: "running"}}}

	// The state: created (its timings), then stopped; the start that
	// followed was cut off after `compose start` ran on the host, so the
	// state is still the stopped one's, and refresh (Read) reads it ready.
	state := sandboxModel{
		Inputs: types.MapNull(types.StringType), Labels: types.MapValueMust(types.StringType, map[string]attr.Value{"slot": types.StringValue("s1")}),
		Env: types.MapNull(types.StringType), HostLabels: types.MapNull(types.StringType), EnvWO: types.MapNull(types.StringType),
		TTL: types.StringNull(), PublishedPorts: types.StringValue(backends.PortsFree), WaitForPorts: types.BoolValue(false),
		DesiredState: types.StringValue(backends.DesiredStopped), OnExpiry: types.StringValue(backends.ExpiryDestroy),
		Timings: types.MapNull(types.Float64Type),
	}
	if d := state.fromBackend(ctx, record(map[string]float64{"copy": 0.2, "render": 0.1, "up": 1.5, "ready": 0.4, "total": 2.321}), running, "soak"); d.HasError() {
		t.Fatal(d)
	}
	if d := state.fromBackend(ctx, record(nil), running, "soak"); d.HasError() { // Read after the cut start
		t.Fatal(d)
	}

	// The plan of the converging apply: the configuration asks running.
	// The framework marks computed attributes unknown, then timings'
	// UseStateForUnknown puts the state's back; ModifyPlan runs.
	plan := state
	plan.DesiredState = types.StringValue(backends.DesiredRunning)
	plan.Status, plan.Services, plan.Endpoints = types.StringUnknown(), types.ListUnknown(serviceType), types.MapUnknown(types.StringType)
	plan.Timings = state.Timings
	p := &sandboxPlan{resp: &resource.ModifyPlanResponse{}, plan: plan, state: &state}
	p.replaceOnChange(ctx)
	p.planServices(ctx, nil)
	if p.replacing() {
		t.Fatalf("planned a replacement (%v); the soak's sandbox was updated in place", p.resp.RequiresReplace)
	}
	planned := p.plan

	// Update: a stop or a start measures new timings; without one, the
	// read-back keeps the planned values (Update's else branch).
	applied := planned
	if stopsOrStarts(planned, state) {
		if d := applied.fromBackend(ctx, record(map[string]float64{"start": 0.186, "ready": 0, "total": 0.186}), running, "soak"); d.HasError() {
			t.Fatal(d)
		}
	}

	// Terraform's check (objchange.AssertObjectCompatible): a known
	// planned value must be what apply returns.
	for name, v := range map[string][2]attr.Value{
		"status": {planned.Status, applied.Status}, "services": {planned.Services, applied.Services},
		"endpoints": {planned.Endpoints, applied.Endpoints}, "timings": {planned.Timings, applied.Timings},
	} {
		if v[0].IsUnknown() {
			continue
		}
		if !v[0].Equal(v[1]) {
			t.Errorf("%s: planned known %v, but Update returns %v: \"Provider produced inconsistent result after apply\"", name, v[0], v[1])
		}
	}
}
