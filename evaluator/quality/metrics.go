package quality

import (
	"fmt"
	"math"
	"strconv"
)

// Role is the speed-stage engine that generated a trajectory.
type Role string

// Roles, spelled as the speed stage spells them.
const (
	RoleB      Role = "B"
	RoleC      Role = "C"
	RoleBPrime Role = "B_prime"
)

// Roles in triplet order.
var Roles = []Role{RoleB, RoleC, RoleBPrime}

// Metric names.
const (
	MeanNLL    = "mean_nll"
	WorstNLL   = "worst_nll"
	TailRate   = "tail_rate"
	ArgmaxRate = "argmax_rate"
)

// MetricNames are the calibrated metrics, in the order decisions report them.
var MetricNames = []string{MeanNLL, WorstNLL, TailRate, ArgmaxRate}

// higherIsBetter names the metrics whose regression is B − C; the others
// regress as C − B.
var higherIsBetter = map[string]bool{ArgmaxRate: true}

// Scored is the teacher's evidence of one rollout: per trajectory token,
// the token, its negative log-likelihood under the reference and the
// reference's own argmax at that position.
type Scored struct {
	Target []int     `json:"target"`
	NLL    []float64 `json:"-"`
	Argmax []int     `json:"argmax"`
}

// Metrics are one rollout's metrics.
type Metrics map[string]float64

// RolloutMetrics computes a rollout's metrics; tail counts tokens whose
// NLL exceeds tailThreshold.
func RolloutMetrics(s Scored, tailThreshold float64) (Metrics, error) {
	n := len(s.Target)
	if n == 0 || len(s.NLL) != n || len(s.Argmax) != n {
		return nil, fmt.Errorf("a rollout of %d tokens with %d NLLs and %d argmaxes", n, len(s.NLL), len(s.Argmax))
	}
	var sum, worst float64
	tail, agree := 0, 0
	for i, x := range s.NLL {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return nil, fmt.Errorf("token %d: NLL %v is not a finite non-negative number", i, x)
		}
		sum += x
		worst = math.Max(worst, x)
		if x > tailThreshold {
			tail++
		}
		if s.Argmax[i] == s.Target[i] {
			agree++
		}
	}
	return Metrics{MeanNLL: sum / float64(n), WorstNLL: worst, TailRate: float64(tail) / float64(n), ArgmaxRate: float64(agree) / float64(n)}, nil
}

// meanStderr is the mean and standard error (sample standard deviation
// over √n; 0 when n is 1) of xs.
func meanStderr(xs []float64) (mean, stderr float64) {
	n := float64(len(xs))
	for _, x := range xs {
		mean += x
	}
	mean /= n
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/(n-1)) / math.Sqrt(n)
}

// format writes a float as the shortest decimal that reads back to the
// same float64: canonical JSON carries no floats, so evidence keeps
// numbers as these strings.
func format(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func parse(field, s string) (float64, error) {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("%s: %q is not a finite decimal", field, s)
	}
	return x, nil
}
