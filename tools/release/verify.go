package main

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// A Problem is one rule a module breaks.
type Problem struct {
	Module *Module
	Msg    string
}

// Errors for a release version that cannot be used.
var (
	errBadVersion     = errors.New("not a canonical semantic version such as v0.1.0")
	errPseudoVersion  = errors.New("a pseudo-version cannot be a release")
	errMajorVersion   = errors.New("v2 and later need /vN module paths, which these modules do not have")
	errNoVersion      = errors.New("no module requires another module of the repository at a release version: pass -version")
	errManyVersions   = errors.New("modules require the repository's modules at different versions")
	errNoVersionBumps = errors.New("no go.mod requires a module of the repository")
)

// CheckVersion returns an error unless v can be tagged as a release of every
// module: a canonical semantic version, not a pseudo-version, major v0 or v1.
func CheckVersion(v string) error {
	switch {
	case !semver.IsValid(v) || semver.Canonical(v) != v || semver.Build(v) != "":
		return fmt.Errorf("%q: %w", v, errBadVersion)
	case module.IsPseudoVersion(v):
		return fmt.Errorf("%q: %w", v, errPseudoVersion)
	case semver.Major(v) != "v0" && semver.Major(v) != "v1":
		return fmt.Errorf("%q: %w", v, errMajorVersion)
	}
	return nil
}

// ReleaseVersion returns the version at which the repository's modules
// require one another: the version the next release tags. Every such
// requirement must name the same version; zero pseudo-versions are left to
// Verify, which reports them module by module.
func ReleaseVersion(r *Repo) (string, error) {
	seen := map[string][]string{} // version -> directories of the go.mod files naming it
	for _, m := range r.Modules {
		for _, req := range m.File.Require {
			if r.ByPath(req.Mod.Path) == nil || isZeroPseudo(req.Mod.Version) {
				continue
			}
			dirs := seen[req.Mod.Version]
			if len(dirs) == 0 || dirs[len(dirs)-1] != m.Dir {
				seen[req.Mod.Version] = append(dirs, m.Dir)
			}
		}
	}
	switch len(seen) {
	case 0:
		return "", errNoVersion
	case 1:
		for v := range seen {
			return v, CheckVersion(v)
		}
	}
	var lines []string
	for v, dirs := range seen {
		lines = append(lines, fmt.Sprintf("%s in %s", v, strings.Join(dirs, ", ")))
	}
	sort.Strings(lines)
	return "", fmt.Errorf("%w (%s): run bump", errManyVersions, strings.Join(lines, "; "))
}

// isZeroPseudo reports whether v is a pseudo-version stamped with the zero
// time, such as v0.0.0-00010101000000-000000000000: a placeholder that names
// no commit, which only a replace directive in the main module can satisfy.
func isZeroPseudo(v string) bool {
	if !module.IsPseudoVersion(v) {
		return false
	}
	t, err := module.PseudoVersionTime(v)
	return err == nil && t.IsZero()
}

// Verify checks the rules that make every published module installable at
// version v, and returns what breaks them:
//   - no go.mod requires or replaces anything at a zero pseudo-version;
//   - every requirement on a module of the repository names v and is replaced
//     by that module's directory, so development builds the tree as it is;
//   - a published module requires no unpublished module, its path is the root
//     module's path joined with its directory (so its tag names it), and none
//     of its Go files imports an internal package of another module.
func Verify(r *Repo, v string) []Problem {
	var ps []Problem
	add := func(m *Module, format string, args ...any) {
		ps = append(ps, Problem{m, fmt.Sprintf(format, args...)})
	}
	root := r.RootModule()
	for _, m := range r.Modules {
		for _, req := range m.File.Require {
			if isZeroPseudo(req.Mod.Version) {
				add(m, "requires %s at the zero pseudo-version %s", req.Mod.Path, req.Mod.Version)
				continue
			}
			dep := r.ByPath(req.Mod.Path)
			if dep == nil {
				continue
			}
			if req.Mod.Version != v {
				add(m, "requires %s %s, not the release version %s", req.Mod.Path, req.Mod.Version, v)
			}
			if !replacedByDir(r, m, dep) {
				add(m, "requires %s without `replace %s => %s`", req.Mod.Path, req.Mod.Path, relDir(m, dep))
			}
			if m.Published && !dep.Published {
				add(m, "requires %s, which is never published", req.Mod.Path)
			}
		}
		for _, rep := range m.File.Replace {
			for _, mv := range []module.Version{rep.Old, rep.New} {
				if isZeroPseudo(mv.Version) {
					add(m, "replaces at the zero pseudo-version %s@%s", mv.Path, mv.Version)
				}
			}
		}
		if !m.Published {
			continue
		}
		if m != root && m.Path != root.Path+"/"+m.Dir {
			add(m, "module path %s is not %s/%s, so tag %s would not name it", m.Path, root.Path, m.Dir, m.Tag(v))
		}
		imports, err := internalImports(r, m)
		if err != nil {
			add(m, "reading its Go files: %v", err)
		}
		for _, imp := range imports {
			add(m, "%s imports %s, an internal package of module %s", imp.file, imp.path, imp.owner.Path)
		}
	}
	return ps
}

// replacedByDir reports whether m's go.mod replaces dep (at any version) with
// dep's own directory.
func replacedByDir(r *Repo, m, dep *Module) bool {
	for _, rep := range m.File.Replace {
		if rep.Old.Path != dep.Path || rep.Old.Version != "" || rep.New.Version != "" {
			continue
		}
		target := filepath.Join(r.AbsDir(m), filepath.FromSlash(rep.New.Path))
		if filepath.Clean(target) == r.AbsDir(dep) {
			return true
		}
	}
	return false
}

// relDir returns dep's directory relative to m's, as a replace names it.
func relDir(m, dep *Module) string {
	up := strings.Repeat("../", strings.Count(m.Dir, "/")+1)
	if m.Dir == "." {
		up = "./"
	}
	if dep.Dir == "." {
		return up
	}
	return up + dep.Dir
}

type internalImport struct {
	file  string // slash path relative to the repository root
	path  string
	owner *Module
}

// internalImports returns the imports, in every Go file of m (tests and
// files for other platforms included), of internal packages that belong to
// another module of the repository.
func internalImports(r *Repo, m *Module) ([]internalImport, error) {
	var found []internalImport
	fset := token.NewFileSet()
	err := walkModule(r.AbsDir(m), func(dir string, goFiles []string) error {
		for _, name := range goFiles {
			p := filepath.Join(dir, name)
			f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, spec := range f.Imports {
				ip, err := strconv.Unquote(spec.Path.Value)
				if err != nil || !isInternal(ip) {
					continue
				}
				owner := r.Owner(ip)
				if owner == nil || owner == m {
					continue
				}
				rel, _ := filepath.Rel(r.Root, p)
				found = append(found, internalImport{filepath.ToSlash(rel), ip, owner})
			}
		}
		return nil
	})
	return found, err
}

// isInternal reports whether import path p names an internal package.
func isInternal(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == "internal" {
			return true
		}
	}
	return false
}

// walkModule calls fn for every directory of the module rooted at dir that
// holds .go files, with their names, skipping nested modules and directories
// the go command ignores.
func walkModule(dir string, fn func(dir string, goFiles []string) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != dir {
			if ignoredDir(d.Name()) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		var goFiles []string
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") {
				goFiles = append(goFiles, e.Name())
			}
		}
		if len(goFiles) == 0 {
			return nil
		}
		return fn(p, goFiles)
	})
}
