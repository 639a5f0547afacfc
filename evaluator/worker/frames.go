package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Why a session's frame did not come, for its client to name in its own
// fault kinds.
var (
	// ErrSessionEnded is a session whose process ended (or closed its
	// frame pipe) while a frame was due.
	ErrSessionEnded = errors.New("the session ended")
	// ErrFrameTimeout is no frame within the limit; the session is killed.
	ErrFrameTimeout = errors.New("no frame in time")
)

// Frames reads a session's frames in the background, so that its client
// can wait for the next one with a time limit and a context. An engine
// session (evaluator/engine) and a teacher session (evaluator/quality)
// read their frames through it.
type Frames struct {
	session *Session
	ch      chan frameOrError
}

type frameOrError struct {
	line []byte
	err  error
}

// ReadFrames starts reading s's frames; it owns s's Frame from now on.
func ReadFrames(s *Session) *Frames {
	f := &Frames{session: s, ch: make(chan frameOrError, 1)}
	go func() {
		for {
			line, err := s.Frame()
			f.ch <- frameOrError{line, err}
			if err != nil {
				close(f.ch)
				return
			}
		}
	}()
	return f
}

// Next waits for the next frame. It returns an error wrapping
// ErrSessionEnded or ErrFrameTimeout (the session then killed), the
// context's error (killed too), or the frame reader's own error (a line
// over the limit, garbage on the pipe).
func (f *Frames) Next(ctx context.Context, limit time.Duration, what string) ([]byte, error) {
	return f.NextWatched(ctx, limit, 0, what)
}

// NextWatched is Next that also ends a session which stops making
// progress for a whole stall window (stall.go): an error wrapping
// ErrStalled (the session's own doing) or ErrStarved (the host's), the
// session then killed. A stall window of 0 watches nothing.
func (f *Frames) NextWatched(ctx context.Context, limit, stall time.Duration, what string) ([]byte, error) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var stalled chan error
	// stopWatch ends a watcher still running and returns its verdict.
	stopWatch := func() error { return nil }
	if stall > 0 {
		stalled = make(chan error, 1)
		done := make(chan struct{})
		go func() { stalled <- f.session.watch(ctx, stall, done) }()
		stopWatch = func() error {
			if stalled == nil {
				return nil
			}
			close(done)
			err := <-stalled
			stalled = nil
			return err
		}
		// The watcher has ended before this returns, so the next wait's
		// watcher never runs beside it.
		defer stopWatch()
	}
	for {
		select {
		case err := <-stalled:
			stalled = nil // ended: nothing to join
			if err != nil {
				return nil, fmt.Errorf("%w (waiting for %s)", err, what)
			}
		case fr, ok := <-f.ch:
			switch {
			case !ok || errors.Is(fr.err, io.EOF):
				// A watcher that ended the session itself sees the pipe
				// close before it can say why: its verdict, not the end it
				// caused, decides. A host-starved engine reported as one
				// that exited would be the candidate's fault.
				if err := stopWatch(); err != nil {
					return nil, fmt.Errorf("%w (waiting for %s)", err, what)
				}
				return nil, fmt.Errorf("%w before %s", ErrSessionEnded, what)
			case fr.err != nil:
				return nil, fr.err
			}
			return fr.line, nil
		case <-timer.C:
			f.session.Kill()
			return nil, fmt.Errorf("%w: no %s within %s", ErrFrameTimeout, what, limit)
		case <-ctx.Done():
			f.session.Kill()
			return nil, ctx.Err()
		}
	}
}

// DecodeFrame decodes one frame strictly: unknown fields and trailing data
// are refused, as a frame that is not the protocol's.
func DecodeFrame(data []byte, v any) error {
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

// Clip quotes a frame for a message, at most 200 bytes of it.
func Clip(b []byte) string {
	if len(b) > 200 {
		return fmt.Sprintf("%q…", b[:200])
	}
	return fmt.Sprintf("%q", b)
}
