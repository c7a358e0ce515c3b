package terraform_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite testdata/rendered from a fresh terraform rendering")

// renderedDir holds the committed output of every fixture under
// testdata/fixtures: rendered/<fixture>/<node>/<file>.
const renderedDir = "testdata/rendered"

// renderedFiles reads one fixture's committed rendering, keyed like the
// module's "files" output.
func renderedFiles(t *testing.T, fixture string) map[string]string {
	t.Helper()
	root := filepath.Join(renderedDir, fixture)
	files := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no rendered files under %s", root)
	}
	return files
}

func fixtures(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("testdata/fixtures")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	if len(out) < 2 {
		t.Fatalf("want at least 2 fixtures, got %v", out)
	}
	return out
}

// configCheck runs `ledgerd agent -config path -config-check` in dir.
func configCheck(t *testing.T, dir, path string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(ledgerdBinary(t), "agent", "-config", path, "-config-check")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// stageConfig writes a rendered agent config into a scratch directory with
// the TLS and tokens files it names: relative paths stay relative to the directory
// the agent runs in, absolute ones are moved under it (the only rewrite).
func stageConfig(t *testing.T, pki testPKI, rendered string) (dir, path string, cfg map[string]any) {
	t.Helper()
	dir = t.TempDir()
	if err := json.Unmarshal([]byte(rendered), &cfg); err != nil {
		t.Fatalf("rendered config is not JSON: %v", err)
	}
	contents := map[string][]byte{
		"tls_ca_file": pki.caPEM, "tls_cert_file": pki.certPEM, "tls_key_file": pki.keyPEM,
		"tokens_file": []byte(`{"tokens": [{"token": "test-only-token", "tenant": "ops", "operator": true}]}`),
	}
	for _, key := range slices.Sorted(maps.Keys(contents)) {
		v, ok := cfg[key].(string)
		if !ok {
			continue
		}
		target := v
		if filepath.IsAbs(v) {
			target = filepath.Join(dir, v)
			cfg[key] = target
		} else {
			target = filepath.Join(dir, v)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, contents[key], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "ledgerd.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, path, cfg
}

// TestRenderedConfigsPassConfigCheck feeds every committed rendering to the
// agent built from this tree. TestRenderMatchesGolden keeps the committed
// files equal to what the module renders, so together they bind the
// templates to the binary.
func TestRenderedConfigsPassConfigCheck(t *testing.T) {
	pki := newTestPKI(t)
	gossipEnv := "LEDGERD_GOSSIP_KEY=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	checked := 0
	for _, fx := range fixtures(t) {
		files := renderedFiles(t, fx)
		for _, name := range slices.Sorted(maps.Keys(files)) {
			if !strings.HasSuffix(name, "/ledgerd.json") {
				continue
			}
			t.Run(fx+"/"+name, func(t *testing.T) {
				dir, path, cfg := stageConfig(t, pki, files[name])
				env := []string{}
				if _, inline := cfg["gossip_key"]; !inline {
					// As systemd passes it from ledgerd.env.
					env = append(env, gossipEnv)
				}
				out, err := configCheck(t, dir, path, env...)
				if err != nil || !strings.Contains(out, "configuration OK") {
					t.Fatalf("ledgerd rejected the rendered config (%v):\n%s\nconfig:\n%s", err, out, files[name])
				}
			})
			checked++
		}
	}
	if checked < 6 {
		t.Errorf("checked %d configs, want every node of every fixture (>= 6)", checked)
	}
}

// TestConfigCheckRejects shows the check above can fail: the same staging
// with a broken config must be refused.
func TestConfigCheckRejects(t *testing.T) {
	pki := newTestPKI(t)
	good := renderedFiles(t, "rehearsal")["rehearsal-1/ledgerd.json"]
	for _, tc := range []struct {
		name, key string
		value     any
	}{
		{"unknown key", "no_such_key", true},
		{"bad gossip key", "gossip_key", "c2hvcnQ="},
		{"bad address", "raft_addr", "127.0.0.11"},
		{"wrong type", "bootstrap_expect", "three"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg map[string]any
			if err := json.Unmarshal([]byte(good), &cfg); err != nil {
				t.Fatal(err)
			}
			cfg[tc.key] = tc.value
			b, _ := json.Marshal(cfg)
			dir, path, _ := stageConfig(t, pki, string(b))
			out, err := configCheck(t, dir, path)
			if err == nil {
				t.Fatalf("ledgerd accepted a config with %s:\n%s", tc.name, out)
			}
			if !strings.Contains(out, tc.key) && tc.key != "no_such_key" {
				t.Errorf("error does not name the key %q:\n%s", tc.key, out)
			}
		})
	}
}

type cloudConfig struct {
	Bootcmd    [][]string `yaml:"bootcmd"`
	WriteFiles []struct {
		Path        string `yaml:"path"`
		Owner       string `yaml:"owner"`
		Permissions string `yaml:"permissions"`
		Encoding    string `yaml:"encoding"`
		Content     string `yaml:"content"`
	} `yaml:"write_files"`
	Runcmd [][]string `yaml:"runcmd"`
}

// TestCloudInitEmbedsRenderedFiles checks that the user data writes
// exactly the rendered config and unit, creates the user, and starts the
// service last; and that a node receives only its own secrets.
func TestCloudInitEmbedsRenderedFiles(t *testing.T) {
	for _, fx := range fixtures(t) {
		files := renderedFiles(t, fx)
		nodes := map[string]bool{}
		for name := range files {
			nodes[strings.Split(name, "/")[0]] = true
		}
		for _, node := range slices.Sorted(maps.Keys(nodes)) {
			t.Run(fx+"/"+node, func(t *testing.T) {
				ud := files[node+"/cloud-init.yaml"]
				if !strings.HasPrefix(ud, "#cloud-config\n") {
					t.Fatalf("user data does not start with #cloud-config")
				}
				var cc cloudConfig
				dec := yaml.NewDecoder(strings.NewReader(ud))
				dec.KnownFields(true)
				if err := dec.Decode(&cc); err != nil {
					t.Fatalf("cloud-init is not the expected YAML: %v\n%s", err, ud)
				}
				written := map[string]string{}
				for _, f := range cc.WriteFiles {
					if f.Encoding != "b64" {
						t.Errorf("%s: encoding %q, want b64", f.Path, f.Encoding)
					}
					b, err := base64.StdEncoding.DecodeString(f.Content)
					if err != nil {
						t.Fatalf("%s: %v", f.Path, err)
					}
					written[filepath.Base(f.Path)] = string(b)
				}
				if written["ledgerd.json"] != files[node+"/ledgerd.json"] {
					t.Errorf("cloud-init writes a different ledgerd.json than the rendered one")
				}
				if written["ledgerd.service"] != files[node+"/ledgerd.service"] {
					t.Errorf("cloud-init writes a different ledgerd.service than the rendered one")
				}
				if len(cc.Bootcmd) == 0 || !strings.Contains(strings.Join(cc.Bootcmd[len(cc.Bootcmd)-1], " "), "useradd --system") {
					t.Errorf("bootcmd does not create the ledgerd system user: %v", cc.Bootcmd)
				}
				if len(cc.Runcmd) == 0 || !slices.Equal(cc.Runcmd[len(cc.Runcmd)-1], []string{"systemctl", "enable", "--now", "ledgerd.service"}) {
					t.Errorf("runcmd does not end by starting ledgerd: %v", cc.Runcmd)
				}
				if _, ok := written["fetch-secrets.sh"]; ok {
					unit := written["ledgerd-secrets.service"]
					if !strings.Contains(unit, "ExecStart=/usr/local/libexec/ledgerd/fetch-secrets.sh") || !strings.Contains(unit, "WantedBy=ledgerd.service") {
						t.Errorf("secrets are fetched but ledgerd-secrets.service does not run the script before ledgerd:\n%s", unit)
					}
					if !slices.ContainsFunc(cc.Runcmd, func(c []string) bool {
						return slices.Equal(c, []string{"systemctl", "enable", "ledgerd-secrets.service"})
					}) {
						t.Errorf("runcmd does not enable ledgerd-secrets.service: %v", cc.Runcmd)
					}
				}
				if script, ok := written["fetch-secrets.sh"]; ok {
					for other := range nodes {
						mine := strings.Contains(script, "/"+other+"/")
						if mine != (other == node) {
							t.Errorf("secrets of %s in %s's fetch script: %v", other, node, mine)
						}
					}
				}
			})
		}
	}
}

// TestRenderMatchesGolden renders every fixture with terraform and
// compares it with the committed files (or rewrites them with -update).
func TestRenderMatchesGolden(t *testing.T) {
	tf := terraformBinary(t)
	work := copyTree(t)
	for _, fx := range fixtures(t) {
		t.Run(fx, func(t *testing.T) {
			dir := filepath.Join(work, "testdata/fixtures", fx)
			runTF(t, tf, dir, "init", "-backend=false", "-input=false", "-no-color")
			runTF(t, tf, dir, "apply", "-auto-approve", "-input=false", "-no-color")
			out := runTF(t, tf, dir, "output", "-json", "files")
			var got map[string]string
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("terraform output: %v\n%s", err, out)
			}
			if *update {
				root := filepath.Join(renderedDir, fx)
				if err := os.RemoveAll(root); err != nil {
					t.Fatal(err)
				}
				for name, content := range got {
					p := filepath.Join(root, filepath.FromSlash(name))
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
			want := renderedFiles(t, fx)
			if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
				t.Fatalf("rendered file set %v, committed %v (rerun with -update)", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
			}
			for name, content := range got {
				if content != want[name] {
					t.Errorf("%s/%s differs from the committed rendering (rerun with -update)", fx, name)
				}
			}
		})
	}
}

// TestTerraformChecks runs the checks the Terraform CLI can make offline.
func TestTerraformChecks(t *testing.T) {
	tf := terraformBinary(t)
	work := copyTree(t)
	runTF(t, tf, work, "fmt", "-check", "-recursive", "-diff", "-no-color")
	cfg := filepath.Join(work, "modules/ledgerd-config")
	runTF(t, tf, cfg, "init", "-backend=false", "-input=false", "-no-color")
	runTF(t, tf, cfg, "validate", "-no-color")
	out := runTF(t, tf, cfg, "test", "-no-color")
	if !strings.Contains(out, "0 failed") {
		t.Errorf("terraform test:\n%s", out)
	}
	t.Logf("terraform test:\n%s", out)
	for _, fx := range fixtures(t) {
		dir := filepath.Join(work, "testdata/fixtures", fx)
		runTF(t, tf, dir, "init", "-backend=false", "-input=false", "-no-color")
		runTF(t, tf, dir, "validate", "-no-color")
	}
}

// copyTree copies modules/ and testdata/fixtures/ into a scratch
// directory, so terraform's working files never land in the source tree.
func copyTree(t *testing.T) string {
	t.Helper()
	work := t.TempDir()
	for _, top := range []string{"modules", "examples", "testdata/fixtures"} {
		err := filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == ".terraform" {
					return filepath.SkipDir
				}
				return os.MkdirAll(filepath.Join(work, path), 0o755)
			}
			if strings.HasPrefix(d.Name(), ".terraform") || strings.HasSuffix(d.Name(), ".tfstate") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(work, path), b, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return work
}

func runTF(t *testing.T, tf, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(tf, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("terraform %s in %s: %v\n%s%s", strings.Join(args, " "), dir, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
