package sink

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/binlake/binlake/internal/durable"
)

// File is what the file sink writes to: an *os.File opened for appending, or a wrapper
// of one in tests.
type File interface {
	io.Writer
	io.ReaderAt
	Sync() error
	Truncate(size int64) error
	Stat() (fs.FileInfo, error)
	Close() error
}

// FileOptions configures OpenFile.
type FileOptions struct {
	Path string
	// Sync fsyncs every Publish before it returns, so a reader of the file never sees a
	// line that a crash of the machine takes back. The wave's offsets do not need it: the
	// wave calls Sync before every commit.
	Sync bool
	// Open opens Path for reading and appending, creating it; nil uses os.OpenFile.
	Open func(path string) (File, error)
	// SyncDir fsyncs a directory; nil uses durable.SyncDir. Tests record the calls.
	SyncDir func(dir string) error
}

func openAppend(path string) (File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
}

// fileSink appends to a file and keeps it a sequence of whole lines, each written once:
// after a failed write or fsync it closes the file, and the next call reopens it and
// truncates it back to the last length that is known good, so the retried lines are not
// written twice and no partial line stays in front of them.
type fileSink struct {
	path      string
	open      func(string) (File, error)
	syncDir   func(string) error
	syncEach  bool
	f         File  // nil after a failure, until reopened
	size      int64 // the length after the last successful write
	synced    int64 // the length known durable
	truncTo   int64 // after a failure: where the reopened file is cut
	lastError error // the failure that closed f, named when reopening fails
}

// OpenFile appends to the file at o.Path, creating it and its directory. A partial line
// at its end (the machine crashed during a write) is cut off: its row comes again from
// the source, since no offset was committed past a line that was not synced.
//
// The file's directory entry (and those of the directories created for it) is synced
// before OpenFile returns, so before any offset that counts on the file is committed: an
// fsync of the file alone leaves its name in the page cache, and a power loss could take
// the whole file while the offset survives.
func OpenFile(o FileOptions) (*Writer, error) {
	if o.Open == nil {
		o.Open = openAppend
	}
	if o.SyncDir == nil {
		o.SyncDir = durable.SyncDir
	}
	if err := durable.MkdirAll(filepath.Dir(o.Path), 0o755, o.SyncDir); err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	fsk := &fileSink{path: o.Path, open: o.Open, syncDir: o.SyncDir, syncEach: o.Sync}
	f, err := o.Open(o.Path)
	if err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	n, err := wholeLines(f)
	if err == nil {
		err = f.Truncate(n)
	}
	if err == nil {
		// What an earlier process wrote may still be in the page cache only.
		err = f.Sync()
	}
	if err == nil {
		// Whether this call created the file or an earlier process did (and crashed before
		// its directory was synced), its name is durable from here on.
		err = o.SyncDir(filepath.Dir(o.Path))
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("file sink %s: %w", o.Path, err)
	}
	fsk.f, fsk.size, fsk.synced = f, n, n
	return &Writer{file: fsk}, nil
}

// wholeLines returns the length of f up to and including its last newline.
func wholeLines(f File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end := st.Size()
	buf := make([]byte, 64<<10)
	for end > 0 {
		n := int64(len(buf))
		if n > end {
			n = end
		}
		if _, err := f.ReadAt(buf[:n], end-n); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("read the end of the file: %w", err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
	}
	return 0, nil
}

// ready reopens the file after a failure, cut back to the last good length. The reopen
// creates the file again if it was removed meanwhile: its directory is synced again.
func (s *fileSink) ready() error {
	if s.f != nil {
		return nil
	}
	f, err := s.open(s.path)
	if err == nil {
		err = s.cappedTruncTo(f)
		if err == nil {
			err = f.Truncate(s.truncTo)
		}
		if err == nil {
			err = s.syncDir(filepath.Dir(s.path))
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("file sink: reopen %s after %v: %w", s.path, s.lastError, err)
	}
	s.f, s.size, s.synced = f, s.truncTo, min(s.synced, s.truncTo)
	return nil
}

// writeStart is where a write that put n bytes in the file before it failed began: the
// length after the last good write, or, when the file is shorter than that and n (it
// was emptied in place meanwhile, and the file is opened for appending), its length
// less n.
func (s *fileSink) writeStart(n int) int64 {
	if st, err := s.f.Stat(); err == nil && st.Size()-int64(n) < s.size {
		return max(0, st.Size()-int64(n))
	}
	return s.size
}

// cappedTruncTo lowers truncTo to f's whole lines when f is shorter: someone emptied
// the file in place meanwhile (truncate -s 0, logrotate's copytruncate), and cutting it
// to the longer length would fill it with zeros up to there.
func (s *fileSink) cappedTruncTo(f File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < s.truncTo {
		n, err := wholeLines(f)
		if err != nil {
			return err
		}
		s.truncTo = n
	}
	return nil
}

// fail closes the file after err; the next call reopens it cut to truncTo.
func (s *fileSink) fail(err error, truncTo int64) error {
	s.f.Close()
	s.f, s.truncTo, s.lastError = nil, truncTo, err
	return err
}

// write appends b whole, or leaves the file as it was.
func (s *fileSink) write(b []byte) error {
	if err := s.ready(); err != nil {
		return err
	}
	if n, err := s.f.Write(b); err != nil {
		return s.fail(fmt.Errorf("file sink: write %s: %w", s.path, err), s.writeStart(n))
	}
	s.size += int64(len(b))
	if s.syncEach {
		return s.sync()
	}
	return nil
}

// sync makes the file durable up to its current length. After a failed fsync the kernel
// may have dropped the dirty pages and a second fsync would report success: the file is
// cut back to what was synced before, and the lines after it are written again once the
// wave publishes again from its committed offset.
func (s *fileSink) sync() error {
	if err := s.ready(); err != nil {
		return err
	}
	if err := s.f.Sync(); err != nil {
		return s.fail(fmt.Errorf("file sink: sync %s: %w", s.path, err), s.synced)
	}
	if err := s.stillThere(); err != nil {
		// The lines went to a file no longer at the path (removed, or renamed by a log
		// rotation): a new file is made there, and the wave writes into it again what
		// it publishes from its committed offset on, so no row is only in the old one.
		// A file made there meanwhile (logrotate's create) keeps its whole lines.
		return s.fail(err, math.MaxInt64)
	}
	s.synced = s.size
	return nil
}

// stillThere reports an error when the path no longer names the file being written:
// removed (rm frees nothing while the wave holds it open, and every row written after
// was lost with it) or renamed.
func (s *fileSink) stillThere() error {
	mine, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("file sink: stat %s: %w", s.path, err)
	}
	cur, err := os.Stat(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("file sink: %s was removed or renamed while the wave wrote it: a new one is made at that path, and the rows since the last commit are written to it again", s.path)
	case err != nil:
		return fmt.Errorf("file sink: stat %s: %w", s.path, err)
	case !os.SameFile(mine, cur):
		return fmt.Errorf("file sink: %s was replaced while the wave wrote it (renamed, and another file made at that path): the rows since the last commit are written again to the file now there", s.path)
	}
	return nil
}

func (s *fileSink) close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
