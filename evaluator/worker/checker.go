package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// A Checker is the validator's own process that owns the memory of one
// candidate worker's checked calls where the controller cannot read that
// memory itself: a GPU's. It runs the checker role
// (cacheon_worker/checker.py) in a worker of its own, which never loads
// candidate code. It allocates one device block for every call holder of
// the cases and exports it as a descriptor (a CUDA virtual-memory handle),
// which the controller passes to the candidate worker (Block, as fd 6):
// the candidate's harness places every call's tensors there. Copy then
// asks the checker for a holder's bytes while the candidate's sandbox is
// stopped, and stores them as the call's snapshot, as the Witness does
// with an arena file on the CPU.
type Checker struct {
	arena DeviceArena
	block *os.File

	send   io.WriteCloser
	frames *bufio.Reader

	mu     sync.Mutex // one copy at a time
	cancel context.CancelFunc
	done   chan struct{}
	out    Outcome
	runErr error
}

// checkerHandshake bounds the checker's start: importing torch, laying
// out the cases and allocating the block.
const checkerHandshake = 5 * time.Minute

// checkerCopyTimeout bounds one copy; a checker that does not answer in
// time is ended, and the call has no copy.
const checkerCopyTimeout = 2 * time.Minute

// StartChecker starts the checker worker s (its Request a CheckerRequest)
// and returns once it has exported its block. On an error the checker is
// ended.
func StartChecker(ctx context.Context, iso Isolation, s Spec) (*Checker, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("checker socket: %w", err)
	}
	local := os.NewFile(uintptr(fds[0]), "checker-socket")
	remote := os.NewFile(uintptr(fds[1]), "checker-socket")
	defer local.Close()

	ctx, cancel := context.WithCancel(ctx)
	c := &Checker{cancel: cancel, done: make(chan struct{})}
	type session struct {
		send   io.WriteCloser
		frames io.ReadCloser
	}
	started := make(chan session, 1)
	s.Files = []*os.File{remote}
	s.Converse = func(send io.WriteCloser, frames io.ReadCloser) { started <- session{send, frames} }
	go func() {
		defer close(c.done)
		c.out, c.runErr = Run(ctx, iso, s)
	}()

	fail := func(err error) (*Checker, error) {
		remote.Close()
		c.Close()
		why := lastLine(Tail(s.WorkDir, StderrFile, 2000))
		if why != "" {
			err = fmt.Errorf("%w (checker: %s)", err, why)
		}
		return nil, fmt.Errorf("checker: %w", err)
	}
	timer := time.NewTimer(checkerHandshake)
	defer timer.Stop()
	var ss session
	select {
	case ss = <-started:
	case <-c.done:
		if c.runErr != nil {
			return fail(c.runErr)
		}
		return fail(fmt.Errorf("the worker %s before it started", c.out.Describe()))
	case <-timer.C:
		return fail(errors.New("the worker did not start within " + checkerHandshake.String()))
	}
	// The worker holds its end now: the socket ends when it does.
	remote.Close()
	c.send, c.frames = ss.send, bufio.NewReaderSize(ss.frames, 1<<20)

	type hello struct {
		arena DeviceArena
		block *os.File
		err   error
	}
	got := make(chan hello, 1)
	go func() {
		var h hello
		line, err := readLine(c.frames)
		if err != nil {
			got <- hello{err: fmt.Errorf("no layout from the worker: %w", err)}
			return
		}
		var head struct {
			DeviceArena
			Error string `json:"error"`
		}
		if err := json.Unmarshal(line, &head); err != nil || head.Error != "" || head.Bytes <= 0 {
			got <- hello{err: fmt.Errorf("the worker's layout line is not one: %q", line)}
			return
		}
		h.arena = head.DeviceArena
		h.block, h.err = receiveFile(local)
		got <- h
	}()
	select {
	case h := <-got:
		if h.err != nil {
			return fail(h.err)
		}
		c.arena, c.block = h.arena, h.block
	case <-timer.C:
		return fail(errors.New("no block from the worker within " + checkerHandshake.String()))
	}
	for name, h := range c.arena.Holders {
		if h.Offset < 0 || h.Bytes < 0 || h.Offset+h.Bytes > c.arena.Bytes {
			return fail(fmt.Errorf("holder %s lies outside the block", name))
		}
	}
	return c, nil
}

// readLine reads one line of at most the reader's buffer (1 MiB).
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	return line, nil
}

// receiveFile reads the one descriptor the worker sends on sock.
func receiveFile(sock *os.File) (*os.File, error) {
	buf := make([]byte, 16)
	oob := make([]byte, syscall.CmsgSpace(4))
	n, oobn, _, _, err := syscall.Recvmsg(int(sock.Fd()), buf, oob, syscall.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("receive the block: %w", err)
	}
	if n == 0 && oobn == 0 {
		return nil, errors.New("the worker closed its socket without sending the block")
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, errors.New("the worker sent no descriptor")
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return nil, errors.New("the worker sent no single descriptor")
	}
	return os.NewFile(uintptr(fds[0]), "checker-block"), nil
}

// Arena is the block as the candidate's request states it, passed on fd.
func (c *Checker) Arena(fd int) *DeviceArena {
	a := c.arena
	a.FD = fd
	return &a
}

// Block is the exported block, for the candidate worker's Files.
func (c *Checker) Block() *os.File { return c.block }

// Copy stores the bytes of holder name, as the checker reads them now,
// in a new file dst. A name the block has no holder for makes no copy (the
// call fails for want of one); a checker that does not answer properly is
// the machine's failure.
func (c *Checker) Copy(name, dst string) error {
	h, ok := c.arena.Holders[name]
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := time.AfterFunc(checkerCopyTimeout, c.cancel)
	defer t.Stop()
	cmd, _ := json.Marshal(map[string]string{"copy": name})
	if _, err := c.send.Write(append(cmd, '\n')); err != nil {
		return fmt.Errorf("checker: ask for %s: %w", name, err)
	}
	line, err := readLine(c.frames)
	if err != nil {
		return fmt.Errorf("checker: copy of %s: %w", name, err)
	}
	var reply struct {
		Bytes *int64 `json:"bytes"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(line, &reply); err != nil || reply.Bytes == nil || reply.Error != "" {
		return fmt.Errorf("checker: copy of %s: %q", name, line)
	}
	if *reply.Bytes != h.Bytes || h.Bytes > MaxWitnessBytes {
		return fmt.Errorf("checker: copy of %s is %d bytes, its holder %d", name, *reply.Bytes, h.Bytes)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.CopyN(out, c.frames, h.Bytes)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("checker: copy of %s: %w", name, err)
	}
	return nil
}

// Close ends the checker (its commands end; one that does not exit soon
// after is stopped) and returns how its worker ended.
func (c *Checker) Close() (Outcome, error) {
	if c.send != nil {
		c.send.Close()
	}
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.cancel()
		<-c.done
	}
	c.cancel()
	if c.block != nil {
		c.block.Close()
	}
	return c.out, c.runErr
}
