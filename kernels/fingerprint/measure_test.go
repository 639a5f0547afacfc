package fingerprint

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/testtree"
)

// streams are a proposal's normalized token streams, one per selected
// file, for measuring parameters other than the package's.
type streams map[string][]string

func streamsOf(t testing.TB, dir string) streams {
	t.Helper()
	files, err := normalizeSelected(inspect(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	out := streams{}
	for _, f := range files {
		out[f.path] = f.toks
	}
	return out
}

// score is the symmetric containment of two proposals under (k, w,
// minTokens): the least containment of any substantial file of either in
// the other, or -1 when one side has no substantial file.
func score(a, b streams, k, w, minTokens int) float64 {
	sets := func(s streams) (all []uint64, sub [][]uint64) {
		var every [][]uint64
		for _, toks := range s {
			h := winnow(toks, k, w)
			every = append(every, h)
			if len(toks) >= minTokens && len(h) > 0 {
				sub = append(sub, h)
			}
		}
		return union(every...), sub
	}
	aAll, aSub := sets(a)
	bAll, bSub := sets(b)
	if len(aSub) == 0 || len(bSub) == 0 {
		return -1
	}
	least := 1.0
	for _, h := range aSub {
		least = min(least, float64(intersect(h, bAll))/float64(len(h)))
	}
	for _, h := range bSub {
		least = min(least, float64(intersect(h, aAll))/float64(len(h)))
	}
	return least
}

// measurement is the corpus the parameters are chosen on: the distinct
// contributions (which must stay apart) and near-copies built from them
// (which containment must catch).
type measurement struct {
	distinct map[string]streams
	copies   map[string][2]streams
}

func measureCorpus(t *testing.T) measurement {
	m := measurement{distinct: map[string]streams{}, copies: map[string][2]streams{}}
	for _, c := range contributions {
		m.distinct[c] = streamsOf(t, bundleCopy(t, "contributions/"+c))
	}
	m.distinct["cuda_fixture"] = streamsOf(t, cudaBundle(t))
	variant := func(name, base string, change func(t *testing.T, dir string)) {
		orig := bundleCopy(t, base)
		dup := filepath.Join(t.TempDir(), "copy")
		testtree.Copy(t, orig, dup)
		change(t, dup)
		m.copies[name] = [2]streams{streamsOf(t, orig), streamsOf(t, dup)}
	}
	variant("moe_epilogue reordered", "contributions/moe_epilogue_atomic_torch", func(t *testing.T, dir string) {
		writeFile(t, dir, "kernels/epilogue.py", reorderTopLevel(t, readFile(t, dir, "kernels/epilogue.py")))
	})
	variant("silu_and_mul_triton reordered", "contributions/silu_and_mul_triton", func(t *testing.T, dir string) {
		writeFile(t, dir, "kernels/silu_and_mul.py", reorderTopLevel(t, readFile(t, dir, "kernels/silu_and_mul.py")))
	})
	variant("rmsnorm_triton reordered", "contributions/rmsnorm_triton", func(t *testing.T, dir string) {
		writeFile(t, dir, "kernels/rmsnorm.py", reorderTopLevel(t, readFile(t, dir, "kernels/rmsnorm.py")))
	})
	variant("decode_attention one statement moved", "contributions/decode_attention_torch", func(t *testing.T, dir string) {
		edit(t, dir, "kernels/attention_decode.py",
			"    positions = torch.arange(cache_len, device=q.device)\n", "",
			"    qf = q.float()", "    positions = torch.arange(cache_len, device=q.device)\n    qf = q.float()")
	})
	variant("rmsnorm_triton arithmetic edit", "contributions/rmsnorm_triton", arithmeticEdit)
	return m
}

// arithmeticEdit is a small genuine change of a kernel's arithmetic:
// a reciprocal multiply for the division of the mean of squares.
func arithmeticEdit(t *testing.T, dir string) {
	edit(t, dir, "kernels/rmsnorm.py", "mean_sq = tl.sum(x * x, axis=0) / hidden", "mean_sq = tl.sum(x * x, axis=0) * (1.0 / hidden)")
}

func (m measurement) extremes(k, w, n int) (maxDistinct float64, maxPair string, minCopy float64, minName string) {
	maxDistinct, minCopy = -1, 2
	names := make([]string, 0, len(m.distinct))
	for name := range m.distinct {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, a := range names {
		for _, b := range names[i+1:] {
			if s := score(m.distinct[a], m.distinct[b], k, w, n); s > maxDistinct {
				maxDistinct, maxPair = s, a+" / "+b
			}
		}
	}
	for name, p := range m.copies {
		if s := score(p[0], p[1], k, w, n); s < minCopy {
			minCopy, minName = s, name
		}
	}
	return maxDistinct, maxPair, minCopy, minName
}

// TestParametersSeparateCopiesFromDistinct measures, over a grid of
// k-gram lengths, windows and substantial-file sizes, the highest
// symmetric containment between two distinct contributions and the
// lowest between a contribution and a near-copy; the chosen parameters
// must leave ThresholdPercent strictly between the two. Run it with -v
// for the table docs/reference/anti-copy.md quotes.
func TestParametersSeparateCopiesFromDistinct(t *testing.T) {
	m := measureCorpus(t)
	var b strings.Builder
	fmt.Fprintf(&b, "%3s %3s %4s  %-8s %-8s  %s\n", "k", "w", "N", "distinct", "copies", "closest distinct pair / weakest copy")
	for _, k := range []int{4, 6, 8, 10, 12} {
		for _, w := range []int{2, 4, 8} {
			for _, n := range []int{20, 40, 80} {
				d, dp, c, cn := m.extremes(k, w, n)
				mark := ""
				if k == K && w == Window && n == MinTokens {
					mark = "  <- chosen"
				}
				fmt.Fprintf(&b, "%3d %3d %4d  %8.3f %8.3f  %s / %s%s\n", k, w, n, d, c, dp, cn, mark)
			}
		}
	}
	t.Logf("symmetric containment (max over distinct pairs, min over copies):\n%s", b.String())
	thr := float64(ThresholdPercent) / 100
	names := make([]string, 0, len(m.copies))
	for name := range m.copies {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := m.copies[name]
		t.Logf("chosen parameters: %-40s %.3f", name, score(p[0], p[1], K, Window, MinTokens))
	}
	worst, worstPair := 0.0, ""
	for a, sa := range m.distinct {
		for b, sb := range m.distinct {
			if a == b {
				continue
			}
			// One-sided: the most of any substantial file of a found in b.
			var sets [][]uint64
			for _, toks := range sb {
				sets = append(sets, winnow(toks, K, Window))
			}
			bAll := union(sets...)
			for path, toks := range sa {
				h := winnow(toks, K, Window)
				if len(toks) < MinTokens || len(h) == 0 {
					continue
				}
				if c := float64(intersect(h, bAll)) / float64(len(h)); c > worst {
					worst, worstPair = c, a+":"+path+" in "+b
				}
			}
		}
	}
	t.Logf("chosen parameters: highest one-sided containment between distinct contributions %.3f (%s)", worst, worstPair)
	if worst >= thr {
		t.Errorf("one-sided containment %.3f of %s reaches the threshold", worst, worstPair)
	}
	for _, name := range contributions {
		n := 0
		for _, toks := range m.distinct[name] {
			n += len(toks)
		}
		t.Logf("normalized tokens: %-40s %d", name, n)
	}
	d, dp, c, cn := m.extremes(K, Window, MinTokens)
	if d >= thr {
		t.Errorf("distinct contributions %s reach %.3f ≥ threshold %.2f", dp, d, thr)
	}
	if c < thr {
		t.Errorf("near-copy %q reaches only %.3f < threshold %.2f", cn, c, thr)
	}
}
