// Package report renders a qualification's human report: one
// self-contained HTML file (no script, no external resource) with the
// verdict, an SVG plot of every read's per-window rates against the noise
// band and the pass/fail limits, under a v9 policy each read set's speedup
// against the bar, the pristine reference's per-prompt NLL of each role
// when T scored, and a timeline of the stages.
//
// The HTML is a view of the canonical JSON report, never the evidence
// itself: `cacheon evidence regrade` works from the JSON and the raw reads.
package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// View is what the page shows.
type View struct {
	Title    string
	Decision string // PASS, FAIL or NO_DECISION
	Reason   string
	Speedup  string // as graded, 17 significant digits; "" when not graded
	Facts    []Fact // digests and settings shown in a table
	Series   []Series
	// Limits drawn across the plot as ratios to the first baseline's
	// scored rate (FailBelow and PassAt for v7, Required for a concluding
	// grade); zero values are not drawn.
	FailBelow, PassAt, Required float64
	// NoiseBand is the relative half-width of the band drawn around the
	// baseline's scored rate (the policy's max_noise).
	NoiseBand float64
	Stages    []Stage
	// Prompts are the pristine reference T's per-prompt mean token NLL
	// of each role's trajectory (nats), when T scored; drawn as a second
	// plot with the prompts ordered by B's NLL.
	Prompts []PromptNLL
	// QualityDecision and QualityReason are T's verdict, shown with it.
	QualityDecision, QualityReason string
	// Sets are a version 9 grade's read sets, in read order (none under
	// v7 and v8): drawn as each set's speedup against Required and their
	// mean, SetMean.
	Sets    []ReadSet
	SetMean float64
}

// ReadSet is one v9 read set: its C over the mean of its B and B′, and
// whether the grade kept it (a set whose B and B′ drifted apart is not).
type ReadSet struct {
	Speedup float64
	Kept    bool
}

// PromptNLL is one prompt's mean NLL per role ("B", "C", "B_prime").
type PromptNLL struct {
	Digest string
	NLL    map[string]float64
}

// Fact is one labelled value of the summary table.
type Fact struct{ Label, Value string }

// Series is one read's per-window rates, in tokens per second.
type Series struct {
	Role    string // B, C, B_prime
	Scored  float64
	Windows []float64
}

// Stage is one step of the qualification.
type Stage struct {
	Name     string
	Decision string
	Start    time.Duration // from the start of the qualification
	Duration time.Duration
	Detail   string
}

var colors = map[string]string{"B": "#1f77b4", "C": "#d62728", "B_prime": "#2ca02c"}

// Geometry of the plot, in SVG user units.
const (
	plotW, plotH           = 720, 320
	setsH                  = 220 // the read-sets plot's height
	padL, padR, padT, padB = 70, 20, 20, 40
)

type svgLine struct {
	Points, Color, Role string
	Dots                []svgDot
}

type svgDot struct{ X, Y string }

type svgRule struct {
	Y, Label, Color, Dash string
	Below                 bool // the label goes under the line, not over it
}

type svgBar struct {
	X, W, Y, Label, Color, Title string
}

type page struct {
	View
	Lines        []svgLine
	Rules        []svgRule
	Band         *svgRule
	BandY, BandH string
	YTicks       []svgRule
	Bars         []svgBar
	TimelineH    int
	Empty        bool
	DecisionCls  string
	// The NLL plot: one dot per prompt and role, its y ticks.
	NLLDots  []svgNLLDot
	NLLTicks []svgRule
	// Legend is one entry per role drawn in the rates plot (a v9 stage
	// reads each role once per set).
	Legend []svgLine
	// The read-sets plot: one dot per set, the bar, the mean and 1.
	SetDots  []svgSetDot
	SetRules []svgRule
	SetTicks []svgRule
}

type svgSetDot struct{ X, Y, Fill, Class, Title string }

type svgNLLDot struct{ X, Y, Color, Role, Title string }

// Render writes the page.
func Render(w io.Writer, v View) error {
	p := page{View: v, DecisionCls: strings.ToLower(strings.ReplaceAll(v.Decision, "_", "-"))}
	p.plot()
	p.setsPlot()
	p.nllPlot()
	p.timeline()
	return pageTemplate.Execute(w, p)
}

func (p *page) plot() {
	lo, hi := math.Inf(1), math.Inf(-1)
	n := 0
	for _, s := range p.Series {
		for _, r := range s.Windows {
			lo, hi = math.Min(lo, r), math.Max(hi, r)
		}
		if len(s.Windows) > n {
			n = len(s.Windows)
		}
	}
	if n == 0 || math.IsInf(lo, 0) {
		p.Empty = true
		return
	}
	base := 0.0
	if len(p.Series) > 0 {
		base = p.Series[0].Scored
	}
	for _, lim := range []float64{p.FailBelow, p.PassAt, p.Required} {
		if lim > 0 && base > 0 {
			lo, hi = math.Min(lo, base*lim), math.Max(hi, base*lim)
		}
	}
	if p.NoiseBand > 0 && base > 0 {
		lo, hi = math.Min(lo, base*(1-p.NoiseBand)), math.Max(hi, base*(1+p.NoiseBand))
	}
	span := hi - lo
	if span <= 0 {
		span = math.Max(hi*0.01, 1e-9)
	}
	lo, hi = lo-span*0.08, hi+span*0.08
	x := func(i int) float64 {
		if n == 1 {
			return padL + float64(plotW-padL-padR)/2
		}
		return padL + float64(i)*float64(plotW-padL-padR)/float64(n-1)
	}
	y := func(r float64) float64 { return padT + (hi-r)/(hi-lo)*float64(plotH-padT-padB) }
	f := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	for _, s := range p.Series {
		color := colors[s.Role]
		if color == "" {
			color = "#555"
		}
		l := svgLine{Color: color, Role: s.Role}
		var pts []string
		for i, r := range s.Windows {
			pts = append(pts, f(x(i))+","+f(y(r)))
			l.Dots = append(l.Dots, svgDot{f(x(i)), f(y(r))})
		}
		l.Points = strings.Join(pts, " ")
		p.Lines = append(p.Lines, l)
		if !hasRole(p.Legend, s.Role) {
			p.Legend = append(p.Legend, svgLine{Color: color, Role: s.Role})
		}
	}
	if base > 0 {
		if p.NoiseBand > 0 {
			top, bottom := y(base*(1+p.NoiseBand)), y(base*(1-p.NoiseBand))
			p.BandY, p.BandH = f(top), f(bottom-top)
		}
		add := func(ratio float64, label, color, dash string) {
			if ratio > 0 {
				p.Rules = append(p.Rules, svgRule{Y: f(y(base * ratio)), Label: label, Color: color, Dash: dash})
			}
		}
		add(1, "B scored", colors["B"], "2,2")
		// B's label goes under its line: the limits above it are usually
		// within a label's height of it.
		p.Rules[len(p.Rules)-1].Below = true
		add(p.FailBelow, fmt.Sprintf("fail below ×%.4f", p.FailBelow), "#9467bd", "6,3")
		add(p.PassAt, fmt.Sprintf("pass at ×%.4f", p.PassAt), "#ff7f0e", "6,3")
		add(p.Required, fmt.Sprintf("required ×%.4f", p.Required), "#8c564b", "6,3")
	}
	for i := 0; i <= 4; i++ {
		r := lo + (hi-lo)*float64(i)/4
		p.YTicks = append(p.YTicks, svgRule{Y: f(y(r)), Label: fmt.Sprintf("%.4g", r)})
	}
}

func hasRole(lines []svgLine, role string) bool {
	for _, l := range lines {
		if l.Role == role {
			return true
		}
	}
	return false
}

// setsPlot places each v9 read set's speedup (filled when kept, hollow
// when dropped) against 1, the bar (Required) and the kept sets' mean: a
// candidate passes when the mean line is at or above the bar, whatever a
// single set shows.
func (p *page) setsPlot() {
	if len(p.Sets) == 0 {
		return
	}
	lo, hi := math.Min(1, p.SetMean), math.Max(1, p.SetMean)
	if p.Required > 0 {
		lo, hi = math.Min(lo, p.Required), math.Max(hi, p.Required)
	}
	for _, s := range p.Sets {
		lo, hi = math.Min(lo, s.Speedup), math.Max(hi, s.Speedup)
	}
	span := math.Max(hi-lo, 1e-4)
	lo, hi = lo-span*0.1, hi+span*0.1
	n := len(p.Sets)
	x := func(i int) float64 { return padL + (float64(i)+0.5)*float64(plotW-padL-padR)/float64(n) }
	y := func(v float64) float64 { return padT + (hi-v)/(hi-lo)*float64(setsH-padT-padB) }
	f := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	for i, s := range p.Sets {
		d := svgSetDot{X: f(x(i)), Y: f(y(s.Speedup)), Fill: colors["C"], Class: "set",
			Title: fmt.Sprintf("set %d: C ×%.5f over the mean of its B and B′", i+1, s.Speedup)}
		if !s.Kept {
			d.Fill, d.Class = "#fff", "set dropped"
			d.Title += " (dropped: its B and B′ drifted apart)"
		}
		p.SetDots = append(p.SetDots, d)
	}
	// ×1's label goes under its line: the bar is usually just above it.
	p.SetRules = append(p.SetRules, svgRule{Y: f(y(1)), Label: "×1 (B and B′)", Color: colors["B"], Dash: "2,2", Below: true})
	if p.Required > 0 {
		p.SetRules = append(p.SetRules, svgRule{Y: f(y(p.Required)), Label: fmt.Sprintf("required ×%.4f", p.Required), Color: "#8c564b", Dash: "6,3"})
	}
	mean := "mean of the kept sets"
	if !anyKept(p.Sets) {
		mean = "mean of the sets (none kept)"
	}
	p.SetRules = append(p.SetRules, svgRule{Y: f(y(p.SetMean)), Label: fmt.Sprintf("%s ×%.4f", mean, p.SetMean), Color: colors["C"], Dash: ""})
	for i := 0; i <= 4; i++ {
		v := lo + (hi-lo)*float64(i)/4
		p.SetTicks = append(p.SetTicks, svgRule{Y: f(y(v)), Label: fmt.Sprintf("×%.4f", v)})
	}
}

func anyKept(sets []ReadSet) bool {
	for _, s := range sets {
		if s.Kept {
			return true
		}
	}
	return false
}

// nllPlot places every prompt's mean NLL per role: x is the prompt's rank
// by B's NLL, so a candidate whose trajectories cost the reference more
// shows as red dots above the blue ones.
func (p *page) nllPlot() {
	if len(p.Prompts) == 0 {
		return
	}
	order := make([]int, len(p.Prompts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return p.Prompts[order[a]].NLL["B"] < p.Prompts[order[b]].NLL["B"] })
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pr := range p.Prompts {
		for _, v := range pr.NLL {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 0) {
		return
	}
	span := hi - lo
	if span <= 0 {
		span = math.Max(math.Abs(hi)*0.01, 1e-6)
	}
	lo, hi = lo-span*0.08, hi+span*0.08
	n := len(order)
	x := func(i int) float64 {
		if n == 1 {
			return padL + float64(plotW-padL-padR)/2
		}
		return padL + float64(i)*float64(plotW-padL-padR)/float64(n-1)
	}
	y := func(v float64) float64 { return padT + (hi-v)/(hi-lo)*float64(plotH-padT-padB) }
	f := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	for rank, i := range order {
		pr := p.Prompts[i]
		for _, role := range []string{"B", "B_prime", "C"} { // C drawn last, on top
			v, ok := pr.NLL[role]
			if !ok {
				continue
			}
			p.NLLDots = append(p.NLLDots, svgNLLDot{X: f(x(rank)), Y: f(y(v)), Color: colors[role], Role: role,
				Title: fmt.Sprintf("prompt %s %s: %.6g nats", shortDigest(pr.Digest), role, v)})
		}
	}
	for i := 0; i <= 4; i++ {
		v := lo + (hi-lo)*float64(i)/4
		p.NLLTicks = append(p.NLLTicks, svgRule{Y: f(y(v)), Label: fmt.Sprintf("%.4g", v)})
	}
}

func shortDigest(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

func (p *page) timeline() {
	var end time.Duration
	for _, s := range p.Stages {
		if e := s.Start + s.Duration; e > end {
			end = e
		}
	}
	p.TimelineH = 24*len(p.Stages) + 10
	if end <= 0 {
		end = 1
	}
	width := float64(plotW - padL - padR - 140)
	for i, s := range p.Stages {
		color := "#7f7f7f"
		switch s.Decision {
		case "PASS":
			color = "#2ca02c"
		case "FAIL":
			color = "#d62728"
		case "NO_DECISION":
			color = "#ff7f0e"
		}
		w := math.Max(2, width*float64(s.Duration)/float64(end))
		p.Bars = append(p.Bars, svgBar{
			X: fmt.Sprintf("%.1f", 140+width*float64(s.Start)/float64(end)), W: fmt.Sprintf("%.1f", w),
			Y: fmt.Sprint(24*i + 4), Label: s.Name, Color: color,
			Title: fmt.Sprintf("%s: %s in %s", s.Name, s.Decision, s.Duration.Round(time.Millisecond)),
		})
	}
}

var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 780px; color: #222; }
.verdict { font-size: 1.6rem; font-weight: 700; padding: .4rem .8rem; display: inline-block; border-radius: 4px; }
.pass { background: #dff5df; color: #1b5e20; } .fail { background: #fde0e0; color: #8b0000; } .no-decision { background: #fff1d6; color: #7a4b00; }
table { border-collapse: collapse; margin: 1rem 0; font-size: .9rem; } td { padding: .2rem .6rem; border-bottom: 1px solid #eee; vertical-align: top; }
td.v { font-family: ui-monospace, monospace; word-break: break-all; }
svg text { font-size: 11px; fill: #333; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p><span class="verdict {{.DecisionCls}}" id="verdict">{{.Decision}}</span> {{.Reason}}{{if .Speedup}} — speedup <b id="speedup">{{.Speedup}}</b>{{end}}</p>
<table>{{range .Facts}}<tr><td>{{.Label}}</td><td class="v">{{.Value}}</td></tr>{{end}}</table>
<h2>Speed reads</h2>
{{if .Empty}}<p id="no-reads">No speed reads were taken.</p>{{else}}
<svg id="rates" xmlns="http://www.w3.org/2000/svg" width="720" height="320" viewBox="0 0 720 320" role="img" aria-label="per-window token rates of each read">
<rect x="0" y="0" width="720" height="320" fill="#fff"/>
{{if .BandH}}<rect class="noise-band" x="70" y="{{.BandY}}" width="630" height="{{.BandH}}" fill="#1f77b4" fill-opacity="0.12"><title>noise band: B scored ± max_noise</title></rect>{{end}}
{{range .YTicks}}<line x1="70" x2="700" y1="{{.Y}}" y2="{{.Y}}" stroke="#eee"/><text x="64" y="{{.Y}}" text-anchor="end" dominant-baseline="middle">{{.Label}}</text>{{end}}
{{range .Rules}}<line class="limit" x1="70" x2="700" y1="{{.Y}}" y2="{{.Y}}" stroke="{{.Color}}" stroke-dasharray="{{.Dash}}"/><text x="698" y="{{.Y}}" dy="{{if .Below}}12{{else}}-3{{end}}" text-anchor="end">{{.Label}}</text>{{end}}
{{range .Lines}}<g class="read" data-role="{{.Role}}"><polyline points="{{.Points}}" fill="none" stroke="{{.Color}}" stroke-width="2"/>{{$c := .Color}}{{range .Dots}}<circle cx="{{.X}}" cy="{{.Y}}" r="3" fill="{{$c}}"/>{{end}}</g>{{end}}
<text x="385" y="312" text-anchor="middle">timed window</text>
<text x="14" y="170" transform="rotate(-90 14 170)" text-anchor="middle">tokens / s</text>
</svg>
<p>{{range .Legend}}<span style="color:{{.Color}}">■</span> {{.Role}} &nbsp; {{end}}</p>{{end}}
{{if .SetDots}}<h2>Read sets</h2>
<p>Each set is its own B, C and B′ engine processes; the grade is the mean of the kept sets' speedups against the bar.</p>
<svg id="sets" xmlns="http://www.w3.org/2000/svg" width="720" height="220" viewBox="0 0 720 220" role="img" aria-label="each read set's speedup, the bar and the mean">
<rect x="0" y="0" width="720" height="220" fill="#fff"/>
{{range .SetTicks}}<line x1="70" x2="700" y1="{{.Y}}" y2="{{.Y}}" stroke="#eee"/><text x="64" y="{{.Y}}" text-anchor="end" dominant-baseline="middle">{{.Label}}</text>{{end}}
{{range .SetRules}}<line class="limit" x1="70" x2="700" y1="{{.Y}}" y2="{{.Y}}" stroke="{{.Color}}" stroke-width="1.5"{{if .Dash}} stroke-dasharray="{{.Dash}}"{{end}}/><text x="698" y="{{.Y}}" dy="{{if .Below}}12{{else}}-3{{end}}" text-anchor="end">{{.Label}}</text>{{end}}
{{range .SetDots}}<circle class="{{.Class}}" cx="{{.X}}" cy="{{.Y}}" r="6" fill="{{.Fill}}" stroke="#d62728" stroke-width="2"><title>{{.Title}}</title></circle>{{end}}
<text x="385" y="212" text-anchor="middle">read set</text>
</svg>{{end}}
{{if .NLLDots}}<h2>Pristine reference T: mean NLL per prompt</h2>
<p id="quality-verdict">{{.QualityDecision}} {{.QualityReason}}</p>
<svg id="nll" xmlns="http://www.w3.org/2000/svg" width="720" height="320" viewBox="0 0 720 320" role="img" aria-label="the reference's mean token NLL of each role's trajectory, per prompt">
<rect x="0" y="0" width="720" height="320" fill="#fff"/>
{{range .NLLTicks}}<line x1="70" x2="700" y1="{{.Y}}" y2="{{.Y}}" stroke="#eee"/><text x="64" y="{{.Y}}" text-anchor="end" dominant-baseline="middle">{{.Label}}</text>{{end}}
{{range .NLLDots}}<circle class="prompt" data-role="{{.Role}}" cx="{{.X}}" cy="{{.Y}}" r="3" fill="{{.Color}}" fill-opacity="0.8"><title>{{.Title}}</title></circle>{{end}}
<text x="385" y="312" text-anchor="middle">prompt, ordered by B's NLL</text>
<text x="14" y="170" transform="rotate(-90 14 170)" text-anchor="middle">mean NLL (nats / token)</text>
</svg>
<p><span style="color:#1f77b4">●</span> B &nbsp; <span style="color:#2ca02c">●</span> B_prime &nbsp; <span style="color:#d62728">●</span> C</p>{{end}}
<h2>Stages</h2>
<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="720" height="{{.TimelineH}}" viewBox="0 0 720 {{.TimelineH}}">
{{range .Bars}}<g class="stage"><text x="0" y="{{.Y}}" dy="12">{{.Label}}</text><rect x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="16" fill="{{.Color}}"><title>{{.Title}}</title></rect></g>{{end}}
</svg>
<table>{{range .Stages}}<tr><td>{{.Name}}</td><td>{{.Decision}}</td><td>{{.Duration}}</td><td>{{.Detail}}</td></tr>{{end}}</table>
</body>
</html>
`))
