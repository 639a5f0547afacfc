package lanes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fakeSMI writes an executable that prints what a driver's nvidia-smi
// prints for these queries (the format, with two H200s).
func fakeSMI(t *testing.T, body string) Runner {
	t.Helper()
	p := filepath.Join(t.TempDir(), "nvidia-smi")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return Runner{NvidiaSMI: p}
}

const twoH200 = `case "$1" in
--query-gpu=index,uuid,name,memory.total) printf '0, GPU-1111aaaa-0000-0000-0000-000000000000, NVIDIA H200, 143771\n1, GPU-2222bbbb-0000-0000-0000-000000000000, NVIDIA H200, 143771\n';;
*) printf 'GPU-1111aaaa-0000-0000-0000-000000000000, 1980, 3201, 412.50, 51, 0x0000000000000000\nGPU-2222bbbb-0000-0000-0000-000000000000, 345, 3201, 75.12, 33, 0x0000000000000001\n';;
esac
`

func TestDiscoverAndRead(t *testing.T) {
	r := fakeSMI(t, twoH200)
	gpus, err := r.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 2 || gpus[1].Index != 1 || gpus[0].Name != "NVIDIA H200" || gpus[0].MemoryMiB != 143771 {
		t.Fatalf("gpus %+v", gpus)
	}
	s, err := r.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s[0].SMClockMHz != 1980 || s[0].PowerW != 412.5 || s[1].ThrottleActive != "0x0000000000000001" {
		t.Fatalf("samples %+v", s)
	}
}

func TestNoGPU(t *testing.T) {
	for name, r := range map[string]Runner{
		"no nvidia-smi": {NvidiaSMI: ""},
		"no driver":     fakeSMI(t, "echo 'NVIDIA-SMI has failed because it couldn'\"'\"'t communicate with the NVIDIA driver.'; exit 9\n"),
	} {
		t.Run(name, func(t *testing.T) {
			if name == "no nvidia-smi" {
				t.Setenv("PATH", t.TempDir())
			}
			if _, err := r.Discover(context.Background()); !errors.Is(err, ErrNoGPU) {
				t.Fatalf("err %v, want ErrNoGPU", err)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	g := func(n int) []GPU {
		var out []GPU
		for i := 0; i < n; i++ {
			out = append(out, GPU{Index: i, UUID: "GPU-" + string(rune('a'+i))})
		}
		return out
	}
	cases := []struct {
		name     string
		gpus     int
		tp       int
		device   string
		shared   bool
		disjoint bool
		err      bool
	}{
		{"cpu lane", 0, 1, "cpu", true, false, false},
		{"one gpu shares", 1, 1, "cuda", true, false, false},
		{"two gpus disjoint", 2, 1, "cuda", false, true, false},
		{"eight gpus tp4", 8, 4, "cuda", false, true, false},
		{"too few for tp", 2, 4, "", false, false, true},
		{"cpu cannot tp", 0, 2, "", false, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := Plan(g(c.gpus), c.tp)
			if c.err {
				if err == nil {
					t.Fatalf("lanes %+v, want an error", l)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l[0].Device != c.device || l[1].Shared != c.shared {
				t.Fatalf("lanes %+v", l)
			}
			if c.disjoint {
				seen := map[string]bool{}
				for _, u := range append(l[0].GPUs, l[1].GPUs...) {
					if seen[u] {
						t.Fatalf("lanes share %s: %+v", u, l)
					}
					seen[u] = true
				}
				if len(l[0].GPUs) != c.tp || len(l[1].GPUs) != c.tp {
					t.Fatalf("lanes %+v, want %d GPUs each", l, c.tp)
				}
			}
			x := Exchange(l)
			if x[0].Name != "baseline" || len(x[0].GPUs) != len(l[1].GPUs) || (len(l[1].GPUs) > 0 && x[0].GPUs[0] != l[1].GPUs[0]) {
				t.Fatalf("exchange %+v of %+v", x, l)
			}
		})
	}
}

// TestRealGPU discovers and samples the machine's GPUs; it runs only where
// CACHEON_TEST_DEVICE=cuda.
func TestRealGPU(t *testing.T) {
	if os.Getenv("CACHEON_TEST_DEVICE") != "cuda" {
		t.Skip("set CACHEON_TEST_DEVICE=cuda to run on a GPU")
	}
	gpus, err := Runner{}.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	samples, err := Runner{}.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != len(gpus) || samples[0].MemClockMHz <= 0 {
		t.Fatalf("gpus %+v samples %+v", gpus, samples)
	}
	if len(DeviceNodes()) == 0 {
		t.Fatal("no /dev/nvidia* device nodes")
	}
	t.Logf("gpus %+v\nsamples %+v\nnodes %v", gpus, samples, DeviceNodes())
}
