package workload

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func TestLublinDeterministicAndWellFormed(t *testing.T) {
	for _, typed := range []bool{false, true} {
		cfg := LublinConfig{MaxNodes: 128, Typed: typed, Seed: 42}
		g1, err := NewLublin(cfg)
		if err != nil {
			t.Fatal(err)
		}
		g2, _ := NewLublin(cfg)
		a, b := g1.Generate(3000), g2.Generate(3000)
		if !slices.Equal(a, b) {
			t.Fatalf("typed=%v: same seed gave different jobs", typed)
		}
		g3, _ := NewLublin(LublinConfig{MaxNodes: 128, Typed: typed, Seed: 43})
		if slices.Equal(a, g3.Generate(3000)) {
			t.Fatalf("typed=%v: different seeds gave the same jobs", typed)
		}
		prev := 0.0
		classes := map[LublinClass]int{}
		for i, j := range a {
			if j.Submit < prev || j.Submit < 0 {
				t.Fatalf("typed=%v job %d: arrival %g before %g", typed, i, j.Submit, prev)
			}
			prev = j.Submit
			if j.Nodes < 1 || j.Nodes > 128 {
				t.Fatalf("typed=%v job %d: %d nodes", typed, i, j.Nodes)
			}
			if j.Runtime < 1 || j.Runtime > math.Exp(maxLogRuntime)+1 {
				t.Fatalf("typed=%v job %d: runtime %g", typed, i, j.Runtime)
			}
			classes[j.Class]++
			if r := j.SWF(int64(i + 1)); r.Run < 1 || r.AllocProcs != j.Nodes || r.Number != int64(i+1) {
				t.Fatalf("SWF conversion: %+v", r)
			}
		}
		if typed && (classes[Batch] == 0 || classes[Interactive] == 0) {
			t.Fatalf("typed generator produced classes %v", classes)
		}
		if !typed && len(classes) != 1 {
			t.Fatalf("typeless generator produced classes %v", classes)
		}
	}
}

// TestLublinSizesFollowModel checks the job-size law directly: the serial
// share and the power-of-two share of parallel jobs match the parameters.
func TestLublinSizesFollowModel(t *testing.T) {
	g, err := NewLublin(LublinConfig{MaxNodes: 128, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := DefaultLublinParams(Typeless, 128)
	const n = 20000
	serial, pow2 := 0, 0
	for _, j := range g.Generate(n) {
		switch {
		case j.Nodes == 1:
			serial++
		case bits.OnesCount64(uint64(j.Nodes)) == 1:
			pow2++
		}
	}
	if got := float64(serial) / n; math.Abs(got-p.SerialProb) > 0.02 {
		t.Errorf("serial share %.3f, want %.3f", got, p.SerialProb)
	}
	// Power-of-two parallel jobs: the rounded ones plus the unrounded ones
	// that land on a power of two by chance, so at least Pow2Prob.
	if got := float64(pow2) / n; got < p.Pow2Prob-0.02 || got > p.Pow2Prob+0.1 {
		t.Errorf("power-of-two parallel share %.3f, want about %.3f", got, p.Pow2Prob)
	}
}

// TestLublinMatchesReferenceTrace compares the generator with a 10,000-job
// workload produced by the model's reference generator for 256 nodes.
func TestLublinMatchesReferenceTrace(t *testing.T) {
	ref, _, err := ReadFile(tracePath(t, "lublin_256.swf.gz"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewLublin(LublinConfig{MaxNodes: 256, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	gen := g.Generate(len(ref))
	var rs, rr, gs, gr []float64
	var rSerial, gSerial int
	for _, j := range ref {
		rs, rr = append(rs, float64(j.AllocProcs)), append(rr, float64(j.Run))
		if j.AllocProcs == 1 {
			rSerial++
		}
	}
	for _, j := range gen {
		gs, gr = append(gs, float64(j.Nodes)), append(gr, j.Runtime)
		if j.Nodes == 1 {
			gSerial++
		}
	}
	within := func(name string, got, want, factor float64) {
		t.Helper()
		if got < want/factor || got > want*factor {
			t.Errorf("%s: generated %.1f, reference %.1f (allowed factor %.1f)", name, got, want, factor)
		} else {
			t.Logf("%s: generated %.1f, reference %.1f", name, got, want)
		}
	}
	within("median size", quantile(gs, 0.5), quantile(rs, 0.5), 1.5)
	within("90th percentile size", quantile(gs, 0.9), quantile(rs, 0.9), 1.5)
	within("median runtime", quantile(gr, 0.5), quantile(rr, 0.5), 2)
	within("75th percentile runtime", quantile(gr, 0.75), quantile(rr, 0.75), 2)
	within("25th percentile runtime", quantile(gr, 0.25), quantile(rr, 0.25), 2)
	within("serial jobs", float64(gSerial), float64(rSerial), 1.2)
	refIA := float64(ref[len(ref)-1].Submit-ref[0].Submit) / float64(len(ref)-1)
	genIA := (gen[len(gen)-1].Submit - gen[0].Submit) / float64(len(gen)-1)
	within("mean interarrival", genIA, refIA, 2)
}

func TestLublinDailyCycle(t *testing.T) {
	g, _ := NewLublin(LublinConfig{MaxNodes: 128, Seed: 3})
	var byHour [24]int
	for _, j := range g.Generate(30000) {
		byHour[int(math.Mod(j.Submit, 86400)/3600)]++
	}
	day := byHour[10] + byHour[11] + byHour[12] + byHour[13] + byHour[14] + byHour[15]
	night := byHour[0] + byHour[1] + byHour[2] + byHour[3] + byHour[4] + byHour[5]
	if day < 2*night {
		t.Errorf("arrivals 10-16h = %d, 0-6h = %d: want a daily cycle with busy days", day, night)
	}
}

func TestGammaRandMoments(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, c := range []struct{ shape, scale float64 }{{0.5, 2}, {1, 1}, {4.2, 0.94}, {312, 0.03}} {
		const n = 40000
		sum, sq := 0.0, 0.0
		for range n {
			x := gammaRand(r, c.shape, c.scale)
			sum += x
			sq += x * x
		}
		mean := sum / n
		vr := sq/n - mean*mean
		wantMean, wantVar := c.shape*c.scale, c.shape*c.scale*c.scale
		if math.Abs(mean-wantMean) > 0.03*wantMean || math.Abs(vr-wantVar) > 0.08*wantVar {
			t.Errorf("Gamma(%g,%g): mean %.4f var %.4f, want %.4f %.4f", c.shape, c.scale, mean, vr, wantMean, wantVar)
		}
	}
	// The bucket masses of the daily cycle integrate a proper density.
	if m := gammaMass(8.1737, 3.9631, 0.0001, 200); math.Abs(m-1) > 1e-3 {
		t.Errorf("gamma density integrates to %g", m)
	}
}

func TestLublinConfigErrors(t *testing.T) {
	if _, err := NewLublin(LublinConfig{MaxNodes: 1}); err == nil {
		t.Error("MaxNodes 1 accepted")
	}
	if _, err := DefaultLublinParams(LublinClass(9), 128); err == nil {
		t.Error("unknown class accepted")
	}
	p, _ := DefaultLublinParams(Batch, 128)
	bad := []func(*LublinParams){
		func(p *LublinParams) { p.SerialProb = 0.6; p.Pow2Prob = 0.6 },
		func(p *LublinParams) { p.UMed = p.UHi + 1 },
		func(p *LublinParams) { p.UHi = 9 },
		func(p *LublinParams) { p.B2 = 0 },
		func(p *LublinParams) { p.ANum = -1 },
		func(p *LublinParams) { p.UProb = 2 },
	}
	for i, f := range bad {
		q := p
		f(&q)
		if _, err := NewLublinWithParams(LublinConfig{MaxNodes: 128}, []LublinClass{Batch}, []LublinParams{q}); err == nil {
			t.Errorf("bad params %d accepted", i)
		}
	}
	if _, err := NewLublinWithParams(LublinConfig{MaxNodes: 128}, []LublinClass{Batch, Interactive}, []LublinParams{p}); err == nil {
		t.Error("mismatched classes/params accepted")
	}
}
