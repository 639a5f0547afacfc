package quality

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/cacheon/engine/evaluator/worker"
	ksubstrate "github.com/cacheon/engine/kernels/substrate"
)

// TeacherProtocol is the teacher-session protocol this controller speaks
// (docs/reference/teacher-session.md).
const TeacherProtocol = "cacheon-teacher-v1"

// TeacherSpec is the reference engine to start.
type TeacherSpec struct {
	Python  string // absolute interpreter path
	Root    string // from worker.EngineRoot
	Tree    string // the reference engine tree (read-only)
	Model   string // the sealed model directory (read-only)
	Device  string // "cpu" or "cuda"
	WorkDir string
	Env     []string
	// StartTimeout bounds loading, ScoreTimeout each trajectory; zero
	// takes the defaults.
	StartTimeout, ScoreTimeout time.Duration
}

// Teacher defaults.
const (
	DefaultStartTimeout = 10 * time.Minute
	DefaultScoreTimeout = 2 * time.Minute
)

// TeacherFault is a teacher session that did not do what the protocol
// says. The teacher runs no candidate code, so every fault is the
// reference's or the host's: NO_DECISION, never the candidate's loss.
type TeacherFault struct {
	Kind   string // "start", "timeout", "exited", "garbage", "refused", "protocol"
	Detail string
}

func (f *TeacherFault) Error() string { return fmt.Sprintf("teacher %s: %s", f.Kind, f.Detail) }

// Teacher is a started, ready reference engine.
type Teacher struct {
	spec      TeacherSpec
	session   *worker.Session
	frames    chan teacherFrame
	Substrate string
	Device    string
	Slots     map[string]string
	next      int
}

type teacherFrame struct {
	line []byte
	err  error
}

// StartTeacher starts the reference engine and waits for its ready frame.
func StartTeacher(ctx context.Context, iso worker.Isolation, s TeacherSpec) (*Teacher, error) {
	if s.StartTimeout == 0 {
		s.StartTimeout = DefaultStartTimeout
	}
	if s.ScoreTimeout == 0 {
		s.ScoreTimeout = DefaultScoreTimeout
	}
	sess, err := worker.StartSession(ctx, iso, worker.SessionSpec{
		Python: s.Python, Root: s.Root, Module: ksubstrate.Package + ".teacher",
		Args:    []string{"--engine-tree", s.Tree, "--model", s.Model, "--device", s.Device},
		WorkDir: s.WorkDir, Env: s.Env, ReadOnly: []string{s.Tree, s.Model},
	})
	if err != nil {
		return nil, &TeacherFault{Kind: "start", Detail: err.Error()}
	}
	t := &Teacher{spec: s, session: sess, frames: make(chan teacherFrame, 1)}
	go func() {
		for {
			line, err := sess.Frame()
			t.frames <- teacherFrame{line, err}
			if err != nil {
				close(t.frames)
				return
			}
		}
	}()
	fail := func(err error) (*Teacher, error) {
		t.session.Kill()
		_, _ = t.session.Close(time.Second)
		return nil, err
	}
	line, err := t.await(ctx, s.StartTimeout, "ready frame")
	if err != nil {
		var f *TeacherFault
		if errors.As(err, &f) {
			f.Kind, f.Detail = "start", f.Kind+": "+f.Detail
		}
		return fail(err)
	}
	var r struct {
		Ready     bool              `json:"ready"`
		Protocol  string            `json:"protocol"`
		Substrate string            `json:"substrate"`
		Device    string            `json:"device"`
		Slots     map[string]string `json:"slots"`
	}
	if err := strict(line, &r); err != nil || !r.Ready {
		return fail(&TeacherFault{Kind: "start", Detail: fmt.Sprintf("the first frame is not a ready frame: %s", clip(line))})
	}
	if r.Protocol != TeacherProtocol {
		return fail(&TeacherFault{Kind: "protocol", Detail: fmt.Sprintf("protocol %q, want %q", r.Protocol, TeacherProtocol)})
	}
	t.Substrate, t.Device, t.Slots = r.Substrate, r.Device, r.Slots
	return t, nil
}

// Score teacher-forces one trajectory after its prompt.
func (t *Teacher) Score(ctx context.Context, prompt, tokens []int) (Scored, error) {
	id := t.next
	t.next++
	req, err := json.Marshal(map[string]any{"op": "score", "id": id, "prompt": prompt, "tokens": tokens})
	if err != nil {
		return Scored{}, err
	}
	if err := t.session.Send(req); err != nil {
		return Scored{}, &TeacherFault{Kind: "exited", Detail: err.Error()}
	}
	line, err := t.await(ctx, t.spec.ScoreTimeout, fmt.Sprintf("frame for trajectory %d", id))
	if err != nil {
		return Scored{}, err
	}
	var refusal struct {
		ID    *int   `json:"id"`
		Error string `json:"error"`
	}
	if strict(line, &refusal) == nil && refusal.Error != "" {
		return Scored{}, &TeacherFault{Kind: "refused", Detail: fmt.Sprintf("trajectory %d: %s", id, refusal.Error)}
	}
	var f struct {
		ID     *int      `json:"id"`
		NLL    []float64 `json:"nll"`
		Argmax []int     `json:"argmax"`
	}
	if err := strict(line, &f); err != nil || f.ID == nil || *f.ID != id {
		return Scored{}, &TeacherFault{Kind: "garbage", Detail: fmt.Sprintf("trajectory %d: %s", id, clip(line))}
	}
	if len(f.NLL) != len(tokens) || len(f.Argmax) != len(tokens) {
		return Scored{}, &TeacherFault{Kind: "garbage", Detail: fmt.Sprintf("trajectory %d: %d NLLs and %d argmaxes for %d tokens", id, len(f.NLL), len(f.Argmax), len(tokens))}
	}
	for i, x := range f.NLL {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return Scored{}, &TeacherFault{Kind: "garbage", Detail: fmt.Sprintf("trajectory %d token %d: NLL %v", id, i, x)}
		}
	}
	return Scored{Target: append([]int(nil), tokens...), NLL: f.NLL, Argmax: f.Argmax}, nil
}

func (t *Teacher) await(ctx context.Context, limit time.Duration, what string) ([]byte, error) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case f, ok := <-t.frames:
		switch {
		case !ok || errors.Is(f.err, io.EOF):
			return nil, &TeacherFault{Kind: "exited", Detail: "the teacher ended while its " + what + " was due"}
		case f.err != nil:
			return nil, &TeacherFault{Kind: "garbage", Detail: f.err.Error()}
		}
		return f.line, nil
	case <-timer.C:
		t.session.Kill()
		return nil, &TeacherFault{Kind: "timeout", Detail: fmt.Sprintf("no %s within %s", what, limit)}
	case <-ctx.Done():
		t.session.Kill()
		return nil, ctx.Err()
	}
}

// Kill stops the teacher now.
func (t *Teacher) Kill() { t.session.Kill() }

// Close ends the session and reports how the teacher process ended.
func (t *Teacher) Close() (worker.Outcome, error) { return t.session.Close(10 * time.Second) }

func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

func clip(b []byte) string {
	if len(b) > 200 {
		return fmt.Sprintf("%q…", b[:200])
	}
	return fmt.Sprintf("%q", b)
}
