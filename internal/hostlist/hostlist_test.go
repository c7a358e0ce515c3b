package hostlist

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"n1", []string{"n1"}},
		{"n[1-3]", []string{"n1", "n2", "n3"}},
		{"n[08-10]", []string{"n08", "n09", "n10"}},
		{"gpu[1,3,5-6],login1", []string{"gpu1", "gpu3", "gpu5", "gpu6", "login1"}},
		{"r[1-2]-n[1-2]", []string{"r1-n1", "r1-n2", "r2-n1", "r2-n2"}},
		{"[1-2]x", []string{"1x", "2x"}},
		{"a,b,c", []string{"a", "b", "c"}},
	} {
		got, err := Expand(tc.in, 100)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Expand(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestExpandErrors(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"", "empty host list"},
		{"n[1-3", "'[' without ']'"},
		{"n1-3]", "']' without '['"},
		{"n[[1]]", "nested '['"},
		{"n[]", "empty '[]'"},
		{"n[3-1]", "runs backwards"},
		{"n[a-b]", "is not a number"},
		{"n[1-]", "missing number"},
		{"a,,b", "empty name"},
		{"n1 n2", "not allowed"},
		{"n[1-3],n2", `"n2" appears twice`},
		{"n[1-101]", "more than 100 names"},
		{"n[1-60],m[1-60]", "more than 100 names"},
		{"r[1-20]-n[1-20]", "more than 100 names"},
		{"n[1234567890]", "longer than 9 digits"},
	} {
		_, err := Expand(tc.in, 100)
		var he *Error
		if !errors.As(err, &he) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Expand(%q): %v, want an *Error with %q", tc.in, err, tc.want)
		}
	}
}

// FuzzExpand: whatever the input, Expand returns names or an *Error,
// never panics, never more than the limit, never a repeat; and a list of
// plain names joined with commas expands to itself.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"n[1-64]", "gpu[01-08],login1", "r[1-2]-n[1,3]", "a,b", "n[", "]", "n[9-1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := Expand(s, 1000)
		if err != nil {
			var he *Error
			if !errors.As(err, &he) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if len(names) == 0 || len(names) > 1000 {
			t.Fatalf("%d names", len(names))
		}
		seen := map[string]bool{}
		for _, n := range names {
			if n == "" || seen[n] {
				t.Fatalf("empty or repeated name %q in %v", n, names)
			}
			seen[n] = true
		}
		if !strings.ContainsAny(s, "[]") {
			if again, err := Expand(strings.Join(names, ","), 1000); err != nil || !slices.Equal(again, names) {
				t.Fatalf("plain list %q does not expand to itself: %v %v", s, again, err)
			}
		}
	})
}

func BenchmarkExpand(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Expand("n[1-1024]", 1<<16); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleExpand() {
	names, _ := Expand("n[08-10],login1", 100)
	fmt.Println(names)
	// Output: [n08 n09 n10 login1]
}

func TestCompress(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"n1", "n2", "n3", "n5"}, "n[1-3,5]"},
		{[]string{"n08", "n09", "n10"}, "n[08-10]"},
		{[]string{"n7"}, "n7"},
		{[]string{"login", "n1", "n2"}, "login,n[1-2]"},
		{[]string{"n3", "n1"}, "n3,n1"},
		{[]string{"a1", "b1", "b2"}, "a1,b[1-2]"},
		{nil, ""},
	} {
		got := Compress(tc.in)
		if got != tc.want {
			t.Errorf("Compress(%v) = %q, want %q", tc.in, got, tc.want)
		}
		if len(tc.in) > 0 {
			if back, err := Expand(got, 100); err != nil || !slices.Equal(back, tc.in) {
				t.Errorf("Expand(Compress(%v)) = %v, %v", tc.in, back, err)
			}
		}
	}
}

// FuzzCompress: Compress of whatever Expand produced expands back to the
// same names.
func FuzzCompress(f *testing.F) {
	for _, s := range []string{"n[1-64]", "gpu[01-08],login1", "r[1-2]-n[1,3]", "a,b", "n[8-12],n[07-09]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := Expand(s, 1000)
		if err != nil {
			return
		}
		c := Compress(names)
		back, err := Expand(c, 1000)
		if err != nil || !slices.Equal(back, names) {
			t.Fatalf("Expand(Compress(Expand(%q))) = Expand(%q) = %v, %v; want %v", s, c, back, err, names)
		}
	})
}
