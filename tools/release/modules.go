package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
)

// unpublishedMarker, at the start of a comment line in a go.mod, keeps that
// module out of releases wherever it lives. The text after it gives the reason.
const unpublishedMarker = "unpublished:"

// unpublishedTops are the top-level directories whose modules are never
// published: the benchmarks and the project's own tools.
var unpublishedTops = []string{"bench", "tools"}

// A Module is one go.mod in the repository.
type Module struct {
	Dir  string // slash-separated, relative to the repository root; "." for the root
	Path string // the module path its go.mod declares
	File *modfile.File
	Data []byte // the go.mod as it is on disk

	Published bool
	Why       string // why it is unpublished; empty when published
}

// Tag returns the git tag that releases m at version v: v itself for the
// root module, and v prefixed with the module's directory for a nested one.
func (m *Module) Tag(v string) string {
	if m.Dir == "." {
		return v
	}
	return m.Dir + "/" + v
}

// Repo is the set of modules in one repository.
type Repo struct {
	Root    string    // absolute directory of the repository
	Modules []*Module // sorted by Dir; Modules[0] is the root module
}

// errNoRootModule reports a repository root without a go.mod.
var errNoRootModule = errors.New("no go.mod at the repository root")

// Discover finds every module under root. Directories the go command ignores
// (names starting with "." or "_", testdata, vendor) are not searched.
func Discover(root string) (*Repo, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	r := &Repo{Root: root}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != root && ignoredDir(d.Name()) {
			return filepath.SkipDir
		}
		data, err := os.ReadFile(filepath.Join(p, "go.mod"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		m, err := newModule(filepath.ToSlash(rel), data)
		if err != nil {
			return err
		}
		r.Modules = append(r.Modules, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(r.Modules, func(i, j int) bool { return r.Modules[i].Dir < r.Modules[j].Dir })
	if len(r.Modules) == 0 || r.Modules[0].Dir != "." {
		return nil, fmt.Errorf("%s: %w", root, errNoRootModule)
	}
	return r, nil
}

// ignoredDir reports whether the go command ignores a directory of this name
// when it matches packages.
func ignoredDir(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
		name == "testdata" || name == "vendor"
}

func newModule(dir string, data []byte) (*Module, error) {
	file := path.Join(dir, "go.mod")
	f, err := modfile.Parse(file, data, nil)
	if err != nil {
		return nil, err
	}
	if f.Module == nil {
		return nil, fmt.Errorf("%s: no module directive", file)
	}
	m := &Module{Dir: dir, Path: f.Module.Mod.Path, File: f, Data: data}
	m.Why = unpublishedReason(dir, data)
	m.Published = m.Why == ""
	return m, nil
}

// unpublishedReason says why the module in dir is never published, or returns
// "" for a published one. The root module is always published. Otherwise a
// module is unpublished when it lives under bench/ or tools/, when its
// directory has a path element named cmd (a command of its own, run from a
// clone), or when its go.mod has a comment line starting with
// "// unpublished:".
func unpublishedReason(dir string, gomod []byte) string {
	if dir == "." {
		return ""
	}
	elems := strings.Split(dir, "/")
	for _, top := range unpublishedTops {
		if elems[0] == top {
			return "under " + top + "/"
		}
	}
	for _, e := range elems {
		if e == "cmd" {
			return "a command module under cmd/"
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		text, ok := strings.CutPrefix(line, "//")
		if !ok {
			continue
		}
		if reason, ok := strings.CutPrefix(strings.TrimSpace(text), unpublishedMarker); ok {
			return "marked: " + strings.TrimSpace(reason)
		}
	}
	return ""
}

// RootModule returns the module at the repository root.
func (r *Repo) RootModule() *Module { return r.Modules[0] }

// Published returns the modules a release tags, root first.
func (r *Repo) Published() []*Module {
	var ms []*Module
	for _, m := range r.Modules {
		if m.Published {
			ms = append(ms, m)
		}
	}
	return ms
}

// ByPath returns the module of the repository with module path p, or nil.
func (r *Repo) ByPath(p string) *Module {
	for _, m := range r.Modules {
		if m.Path == p {
			return m
		}
	}
	return nil
}

// Owner returns the repository module that holds the package with import
// path p (the one with the longest module path that prefixes it), or nil when
// the package lies outside the repository.
func (r *Repo) Owner(p string) *Module {
	var best *Module
	for _, m := range r.Modules {
		if p == m.Path || strings.HasPrefix(p, m.Path+"/") {
			if best == nil || len(m.Path) > len(best.Path) {
				best = m
			}
		}
	}
	return best
}

// AbsDir returns the module's directory on disk.
func (r *Repo) AbsDir(m *Module) string {
	return filepath.Join(r.Root, filepath.FromSlash(m.Dir))
}
