package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// What sandboxer_restore does on hosts: the resource and the action restore
// in place through restoreInPlace; the resource also restores into a new
// sandbox (restoreIntoNewSandbox).

// options are the restore's options; an argument left unset (the action
// has no defaults of its own) takes the resource's default.
func (a *restoreInPlaceArgs) options() checkpoint.RestoreOptions {
	return checkpoint.RestoreOptions{
		Files: boolOr(a.RestoreFiles, true), Env: boolOr(a.RestoreEnv, true),
		Overwrite: boolOr(a.Overwrite, true), Prune: boolOr(a.Prune, false),
	}
}

// restoreInPlace writes the snapshot a names, held on snapHost, into the
// existing sandbox a targets, and returns that sandbox. started, when
// given, hears where the restore goes once the target is found.
func restoreInPlace(ctx context.Context, d *providerData, a *restoreInPlaceArgs, snapHost *hosts.Host,
	started func(target *backends.Sandbox, h *hosts.Host)) (*backends.Sandbox, checkpoint.RestoreResult, error) {
	h, target, err := d.locateSandbox(ctx, a.TargetSandboxID.ValueString(), a.Host.ValueString())
	if err != nil {
		return nil, checkpoint.RestoreResult{}, err
	}
	if started != nil {
		started(target, h)
	}
	snapshotID := a.SnapshotID.ValueString()
	res, err := d.registry.RestoreInPlace(ctx, snapHost, snapshotID, h, target.ID, a.options())
	if err != nil {
		detail := fmt.Sprintf("Snapshot %s (host %q) into sandbox %s (host %q): %v", snapshotID, snapHost.Host(), target.ID, h.Host(), err)
		return nil, res, errors.New(detail)
	}
	return target, res, nil
}

// restoreIntoNewSandbox creates a sandbox from the snapshot summary
// describes, held on snapHost, with the profile, host and inputs plan
// names (by default the snapshot's sandbox's profile, on snapHost).
func restoreIntoNewSandbox(ctx context.Context, d *providerData, plan *restoreModel, snapHost *hosts.Host, summary checkpoint.Summary) (*backends.Sandbox, checkpoint.RestoreResult, error) {
	var res checkpoint.RestoreResult
	profileName := plan.Profile.ValueString()
	if profileName == "" {
		profileName = summary.Profile
	}
	profile, err := d.catalog.Get(profileName)
	if err != nil {
		return nil, res, err
	}
	h := snapHost
	if name := plan.Host.ValueString(); name != "" {
		if h, err = d.host(name); err != nil {
			return nil, res, err
		}
	}
	var diags diag.Diagnostics
	inputs := stringMap(ctx, plan.Inputs, &diags)
	if len(inputs) > 0 {
		if err := profile.CheckInputs(inputs); err != nil {
			return nil, res, err
		}
	}
	sb, res, err := d.registry.RestoreNew(ctx, snapHost, summary.ID, backends.Request{
		ID: backends.NewID(), Profile: profile, Host: h, Inputs: inputs,
		Labels: map[string]string{"restored_from": summary.ID},
		// The restored compose file is checked by the target host's rules.
		Rules: d.hostRules(h.Host()),
	})
	if err != nil {
		detail := fmt.Sprintf("Snapshot %s (host %q) into a new %s sandbox on host %q: %v", summary.ID, snapHost.Host(), profile.Name, h.Host(), err)
		if !errors.Is(err, backends.ErrCleanupFailed) {
			detail += "\n\nWhat was started for the new sandbox has been removed from the host."
		}
		return nil, res, errors.New(detail)
	}
	return sb, res, nil
}
