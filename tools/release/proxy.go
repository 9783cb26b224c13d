package main

import (
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// Publish writes the working tree of each module, as version v, into a
// file-system module proxy rooted at dir: for every module the files
// <escaped path>/@v/list, and .info, .mod and .zip for the version. A go
// command with GOPROXY=file://<dir> then downloads them as it would from a
// public proxy.
func Publish(r *Repo, ms []*Module, v string, dir string) error {
	for _, m := range ms {
		if err := publish(r, m, v, dir); err != nil {
			return err
		}
	}
	return nil
}

func publish(r *Repo, m *Module, v, dir string) error {
	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	escVersion, err := module.EscapeVersion(v)
	if err != nil {
		return err
	}
	vdir := filepath.Join(dir, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(vdir, escVersion)
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{v, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".info", info, 0o644); err != nil {
		return err
	}
	// The .mod must be the go.mod inside the zip, byte for byte.
	if err := os.WriteFile(base+".mod", m.Data, 0o644); err != nil {
		return err
	}
	if err := writeZip(base+".zip", module.Version{Path: m.Path, Version: v}, r.AbsDir(m)); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(vdir, "list"), []byte(v+"\n"), 0o644)
}

// writeZip writes the module zip of the directory src.
func writeZip(dst string, mv module.Version, src string) (err error) {
	files, err := moduleFiles(src)
	if err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	return zip.Create(f, mv, files)
}

// moduleFiles lists the files of the module rooted at src as a tag would
// carry them: regular files only, without nested modules and without
// version-control data. zip.CreateFromDir would do the same but keep the
// .git file of a git worktree.
func moduleFiles(src string) ([]zip.File, error) {
	var files []zip.File
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == src {
			return nil
		}
		if vcsNames[d.Name()] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if _, err := os.Lstat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		files = append(files, dirFile{filepath.ToSlash(rel), p})
		return nil
	})
	return files, err
}

// vcsNames are the version-control entries a module zip never holds.
var vcsNames = map[string]bool{".git": true, ".hg": true, ".svn": true, ".bzr": true}

// dirFile is a file on disk, as zip.Create takes it.
type dirFile struct {
	slashPath string // relative to the module root
	path      string
}

func (f dirFile) Path() string                 { return f.slashPath }
func (f dirFile) Lstat() (fs.FileInfo, error)  { return os.Lstat(f.path) }
func (f dirFile) Open() (io.ReadCloser, error) { return os.Open(f.path) }
