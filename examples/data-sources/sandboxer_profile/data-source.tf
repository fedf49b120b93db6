# What a built-in profile gives: the extension that serves it, whether its
# sandboxes can be snapshotted, which inputs a sandboxer_sandbox must set.
data "sandboxer_profile" "e2e" {
  name = "profile.compose-e2e"
}

# A metered profile: its price and the extension routing falls back to.
data "sandboxer_profile" "burst" {
  name = "profile.burst-sandbox"
}

output "e2e" {
  value = {
    extension          = data.sandboxer_profile.e2e.extension          # "ext.compose-ssh"
    supports_snapshots = data.sandboxer_profile.e2e.supports_snapshots # true
    required_inputs    = data.sandboxer_profile.e2e.required_inputs    # ["repo"]
    source             = data.sandboxer_profile.e2e.source             # "built-in", or the profiles_dir file overriding it
  }
}

output "burst" {
  value = {
    extension_kind   = data.sandboxer_profile.burst.extension_kind   # "metered"
    hourly_price_usd = data.sandboxer_profile.burst.hourly_price_usd # 0.5
    fallback         = data.sandboxer_profile.burst.fallback         # "ext.compose-ssh"
    placement        = data.sandboxer_profile.burst.placement        # ["burst", "local"]
  }
}
