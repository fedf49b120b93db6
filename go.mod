module github.com/sand-boxer/terraform-provider-sandboxer

go 1.26.8

require (
	golang.org/x/crypto v0.58.0
	gopkg.in/yaml.v3 v3.0.1
)

require golang.org/x/sys v0.49.0 // indirect
