package report

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sampleView() View {
	return View{
		Title: "Qualification of rmsnorm_torch", Decision: "PASS", Reason: "proven_faster", Speedup: "1.0312",
		Facts: []Fact{{"candidate", "<b>not markup</b>"}, {"policy", "v8"}},
		Series: []Series{
			{Role: "B", Scored: 100, Windows: []float64{99, 100, 101, 100, 100}},
			{Role: "C", Scored: 103, Windows: []float64{103, 102.5, 103.5, 103, 103}},
			{Role: "B_prime", Scored: 100.2, Windows: []float64{100, 100.2, 100.4, 100.2, 100.1}},
		},
		Required: 1.005, NoiseBand: 0.02,
		Stages: []Stage{
			{Name: "static", Decision: "PASS", Duration: 200 * time.Millisecond},
			{Name: "speed", Decision: "PASS", Start: 200 * time.Millisecond, Duration: 3 * time.Second},
		},
	}
}

// withPrompts adds T's per-prompt NLL of 24 prompts: C costs the
// reference a little more than B and B′ on every prompt.
func withPrompts(v View) View {
	for i := 0; i < 24; i++ {
		b := 5 + 0.02*float64(i%7)
		v.Prompts = append(v.Prompts, PromptNLL{Digest: fmt.Sprintf("%064x", i), NLL: map[string]float64{"B": b, "B_prime": b + 0.001, "C": b + 0.05}})
	}
	v.QualityDecision, v.QualityReason = "PASS", "24 prompts: every metric within its calibrated delta"
	return v
}

func TestRenderIsSelfContainedAndEscaped(t *testing.T) {
	var b bytes.Buffer
	if err := Render(&b, withPrompts(sampleView())); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{`id="rates"`, `data-role="B"`, `data-role="C"`, `data-role="B_prime"`, `class="noise-band"`, `required ×1.0050`, `id="timeline"`, `&lt;b&gt;not markup&lt;/b&gt;`,
		`id="nll"`, `class="prompt" data-role="C"`, `id="quality-verdict"`, "every metric within its calibrated delta"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	for _, banned := range []string{"<script", "http://", "https://"} {
		if strings.Contains(strings.ReplaceAll(html, `xmlns="http://www.w3.org/2000/svg"`, ""), banned) {
			t.Errorf("page contains %q: it must be self-contained", banned)
		}
	}
}

// withSets makes v a version 9 view of four read sets: three kept, one
// dropped, their mean over the bar.
func withSets(v View) View {
	v.Series = nil
	for set := 0; set < 4; set++ {
		v.Series = append(v.Series, sampleView().Series...)
	}
	v.Sets = []ReadSet{{1.006, true}, {1.002, true}, {1.031, false}, {1.007, true}}
	v.SetMean, v.Required = 1.005, 1.0033
	return v
}

func TestRenderReadSets(t *testing.T) {
	var b bytes.Buffer
	if err := Render(&b, withSets(sampleView())); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for want, n := range map[string]int{`id="sets"`: 1, `<circle class="set"`: 3, `<circle class="set dropped"`: 1,
		"mean of the kept sets ×1.0050": 1, "required ×1.0033": 2, `<g class="read" data-role="C"`: 4, `■</span> C`: 1} {
		if got := strings.Count(html, want); got != n {
			t.Errorf("page has %d of %s, want %d", got, want, n)
		}
	}
	b.Reset()
	if err := Render(&b, sampleView()); err != nil || strings.Contains(b.String(), `id="sets"`) {
		t.Fatalf("a v8 view draws a read-sets plot (err %v)", err)
	}
}

func TestRenderWithoutReads(t *testing.T) {
	v := sampleView()
	v.Series, v.Decision, v.Reason = nil, "FAIL", "static screen"
	var b bytes.Buffer
	if err := Render(&b, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `id="no-reads"`) || strings.Contains(b.String(), `id="rates"`) || strings.Contains(b.String(), `id="nll"`) {
		t.Fatal("a report without reads must say so and draw no plot")
	}
}

// TestPlotRendersInABrowser opens the page in headless Chromium and checks
// that the plots are drawn: the candidate's red series must cover pixels of
// the screenshot, not just be present in the source, in the rates plot and,
// on its own, in T's per-prompt NLL plot.
func TestPlotRendersInABrowser(t *testing.T) {
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		if os.Getenv("CACHEON_REQUIRE_BROWSER") != "" {
			t.Fatal("no chromium on PATH and CACHEON_REQUIRE_BROWSER is set")
		}
		t.Skip("no chromium on PATH")
	}
	red, band := pixels(t, browser, sampleView())
	if red < 200 {
		t.Errorf("only %d red pixels: the candidate's series is not drawn", red)
	}
	if band < 2000 {
		t.Errorf("only %d noise-band pixels: the band is not drawn", band)
	}
	// T's plot alone: no reads, so every red pixel is a C dot.
	v := withPrompts(sampleView())
	v.Series = nil
	if red, _ := pixels(t, browser, v); red < 100 {
		t.Errorf("only %d red pixels: the per-prompt NLL of C is not drawn", red)
	}
	// The read-sets plot alone: its red is the sets' dots and mean line.
	v = withSets(sampleView())
	v.Series = nil
	if red, _ := pixels(t, browser, v); red < 200 {
		t.Errorf("only %d red pixels: the read sets are not drawn", red)
	}
}

// pixels renders v, screenshots it in the browser, and counts the pixels
// of the candidate's red (#d62728) and of the noise band (#1f77b4 at 12 %
// over white).
func pixels(t *testing.T, browser string, v View) (red, band int) {
	t.Helper()
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := Render(&b, v); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	cmd := exec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=820,1800", "--screenshot="+shot, "file://"+page)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r8, g8, b8 := r>>8, g>>8, bl>>8
			if r8 > 190 && g8 < 70 && b8 < 70 {
				red++
			}
			if r8 > 215 && r8 < 232 && g8 > 228 && g8 < 240 && b8 > 238 {
				band++
			}
		}
	}
	return red, band
}
