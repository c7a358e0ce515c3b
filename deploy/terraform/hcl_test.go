package terraform_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// hclFiles lists every Terraform source file under the module tree.
func hclFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".terraform" || d.Name() == "rendered") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".tf") || strings.HasSuffix(path, ".tftest.hcl") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d Terraform files; the walk is broken", len(files))
	}
	return files
}

// TestHCLParsesAndIsFormatted parses every file and checks that it is in
// the canonical layout hclwrite produces, which is what `terraform fmt`
// enforces.
func TestHCLParsesAndIsFormatted(t *testing.T) {
	p := hclparse.NewParser()
	for _, path := range hclFiles(t) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, diags := p.ParseHCL(src, path); diags.HasErrors() {
			t.Errorf("%s: %s", path, diags.Error())
			continue
		}
		if got := hclwrite.Format(src); !bytes.Equal(got, src) {
			t.Errorf("%s is not formatted (run terraform fmt -recursive deploy/terraform)", path)
		}
	}
}

// module is the parsed top level of one module directory.
type module struct {
	dir    string
	blocks []*hclsyntax.Block
}

func loadModule(t *testing.T, dir string) module {
	t.Helper()
	p := hclparse.NewParser()
	m := module{dir: dir}
	paths, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no .tf files in %s: %v", dir, err)
	}
	for _, path := range paths {
		f, diags := p.ParseHCLFile(path)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", path, diags.Error())
		}
		m.blocks = append(m.blocks, f.Body.(*hclsyntax.Body).Blocks...)
	}
	return m
}

// find returns the block of the given type and labels, or nil.
func (m module) find(typ string, labels ...string) *hclsyntax.Block {
	for _, b := range m.blocks {
		if b.Type == typ && slices.Equal(b.Labels, labels) {
			return b
		}
	}
	return nil
}

func (m module) all(typ string, firstLabel string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, b := range m.blocks {
		if b.Type == typ && (firstLabel == "" || len(b.Labels) > 0 && b.Labels[0] == firstLabel) {
			out = append(out, b)
		}
	}
	return out
}

// literal evaluates an attribute that must be a constant.
func literal(t *testing.T, b *hclsyntax.Block, name string) string {
	t.Helper()
	a, ok := b.Body.Attributes[name]
	if !ok {
		t.Fatalf("%s %v: no attribute %s", b.Type, b.Labels, name)
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		t.Fatalf("%s %v: %s is not a constant: %s", b.Type, b.Labels, name, diags.Error())
	}
	return v.AsString()
}

// refs lists the dotted references an attribute's expression makes, such
// as "var.http_port" or "aws_security_group.nodes.id".
func refs(b *hclsyntax.Block, name string) []string {
	a, ok := b.Body.Attributes[name]
	if !ok {
		return nil
	}
	var out []string
	for _, tr := range a.Expr.Variables() {
		var parts []string
		for _, step := range tr {
			switch s := step.(type) {
			case hcl.TraverseRoot:
				parts = append(parts, s.Name)
			case hcl.TraverseAttr:
				parts = append(parts, s.Name)
			}
		}
		out = append(out, strings.Join(parts, "."))
	}
	return out
}

func TestVariablesAreDocumentedAndTyped(t *testing.T) {
	for _, dir := range []string{"modules/ledgerd-config", "modules/ledgerd-aws", "examples/aws-three-node"} {
		m := loadModule(t, dir)
		vars := m.all("variable", "")
		if len(vars) == 0 {
			t.Errorf("%s: no variables", dir)
		}
		for _, v := range vars {
			for _, attr := range []string{"description", "type"} {
				if _, ok := v.Body.Attributes[attr]; !ok {
					t.Errorf("%s: variable %q has no %s", dir, v.Labels[0], attr)
				}
			}
		}
		for _, o := range m.all("output", "") {
			if _, ok := o.Body.Attributes["description"]; !ok {
				t.Errorf("%s: output %q has no description", dir, o.Labels[0])
			}
		}
	}
}

// TestConfigModuleIsProviderFree keeps the rendering module offline.
func TestConfigModuleIsProviderFree(t *testing.T) {
	m := loadModule(t, "modules/ledgerd-config")
	for _, typ := range []string{"resource", "data", "provider"} {
		if bs := m.all(typ, ""); len(bs) > 0 {
			t.Errorf("ledgerd-config has %s blocks %v; it must stay provider-free", typ, bs[0].Labels)
		}
	}
	tf := m.find("terraform")
	if tf == nil {
		t.Fatal("ledgerd-config: no terraform block")
	}
	for _, b := range tf.Body.Blocks {
		if b.Type == "required_providers" {
			t.Error("ledgerd-config requires providers")
		}
	}
}

func TestAWSModuleWiring(t *testing.T) {
	m := loadModule(t, "modules/ledgerd-aws")

	cfg := m.find("module", "config")
	if cfg == nil {
		t.Fatal(`ledgerd-aws: no module "config"`)
	}
	if got := literal(t, cfg, "source"); got != "../ledgerd-config" {
		t.Errorf(`module "config" source = %q, want ../ledgerd-config`, got)
	}

	for _, want := range [][]string{
		{"aws_instance", "node"}, {"aws_ebs_volume", "data"}, {"aws_volume_attachment", "data"},
		{"aws_network_interface", "node"}, {"aws_security_group", "nodes"}, {"aws_lb", "api"},
		{"aws_iam_role", "node"}, {"aws_secretsmanager_secret", "gossip"}, {"tls_locally_signed_cert", "node"},
	} {
		if m.find("resource", want...) == nil {
			t.Errorf("ledgerd-aws: no resource %s.%s", want[0], want[1])
		}
	}

	inst := m.find("resource", "aws_instance", "node")
	if !slices.Contains(refs(inst, "user_data_base64"), "module.config.cloud_init") {
		t.Errorf("aws_instance.node user data does not come from module.config.cloud_init: %v", refs(inst, "user_data_base64"))
	}
	vol := m.find("resource", "aws_ebs_volume", "data")
	if !hasNestedBlock(vol, "lifecycle") {
		t.Error("aws_ebs_volume.data has no lifecycle block (prevent_destroy protects the Raft log)")
	}

	// Ingress rules on the nodes' group: anything reachable from outside
	// the group (CIDRs, client groups, the load balancer) must be the API
	// port; Raft and gossip must come from the group itself.
	rules := m.all("resource", "aws_vpc_security_group_ingress_rule")
	if len(rules) == 0 {
		t.Fatal("no ingress rules")
	}
	nodeRules := 0
	for _, r := range rules {
		if !slices.Contains(refs(r, "security_group_id"), "aws_security_group.nodes.id") {
			continue
		}
		nodeRules++
		from, to := refs(r, "from_port"), refs(r, "to_port")
		fromSelf := slices.Contains(refs(r, "referenced_security_group_id"), "aws_security_group.nodes.id")
		if fromSelf {
			continue
		}
		if !slices.Equal(from, []string{"var.http_port"}) || !slices.Equal(to, []string{"var.http_port"}) {
			t.Errorf("ingress rule %s opens %v-%v to non-members; only var.http_port may be", r.Labels[1], from, to)
		}
	}
	if nodeRules < 4 {
		t.Errorf("only %d ingress rules on the nodes' group", nodeRules)
	}
	peer := m.find("resource", "aws_vpc_security_group_ingress_rule", "peer")
	if peer == nil {
		t.Fatal("no peer ingress rule")
	}
	if !slices.Contains(refs(peer, "referenced_security_group_id"), "aws_security_group.nodes.id") {
		t.Error("the peer (Raft, gossip) rule is not limited to the nodes' own group")
	}
}

func hasNestedBlock(b *hclsyntax.Block, typ string) bool {
	for _, nb := range b.Body.Blocks {
		if nb.Type == typ {
			return true
		}
	}
	return false
}

func TestExampleUsesAWSModule(t *testing.T) {
	m := loadModule(t, "examples/aws-three-node")
	b := m.find("module", "ledgerd")
	if b == nil {
		t.Fatal(`example: no module "ledgerd"`)
	}
	if got := literal(t, b, "source"); got != "../../modules/ledgerd-aws" {
		t.Errorf("example module source = %q", got)
	}
	// Every required variable of the AWS module is passed.
	aws := loadModule(t, "modules/ledgerd-aws")
	for _, v := range aws.all("variable", "") {
		if _, hasDefault := v.Body.Attributes["default"]; hasDefault {
			continue
		}
		if _, ok := b.Body.Attributes[v.Labels[0]]; !ok {
			t.Errorf("example does not set required input %q", v.Labels[0])
		}
	}
	// Every argument passed is a declared variable.
	for name := range b.Body.Attributes {
		if name == "source" {
			continue
		}
		if aws.find("variable", name) == nil {
			t.Errorf("example passes %q, which ledgerd-aws does not declare", name)
		}
	}
}
