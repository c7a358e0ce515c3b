// Package terraform holds no product code: it is the home of the tests that
// keep the Terraform modules beside it honest.
//
// What the tests check:
//   - every .tf and .tftest.hcl file parses (hashicorp/hcl) and is in
//     canonical format (the check `terraform fmt -check` makes);
//   - the AWS module is wired as documented: the rendering submodule is
//     used, only the API port is open to clients, Raft and gossip only
//     between nodes;
//   - the committed renderings under testdata/rendered pass
//     `ledgerd agent -config-check` of the binary built from this tree, so a
//     template can never drift from what the agent accepts, and the
//     cloud-init user data embeds exactly those files;
//   - with a terraform binary (on PATH or in $TERRAFORM): fmt, init,
//     validate and `terraform test` of the provider-free modules, and a
//     fresh rendering of every fixture equal to the committed one (rewrite
//     with `go test ./deploy/terraform -update`).
//
// What it must not do: reach a cloud API or a provider registry. Modules
// that need providers are only parsed and format-checked.
package terraform
