package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Runtime is what the static site needs beside the page: the simulator
// built to WebAssembly (web/wasm), Go's wasm_exec.js that runs it, and
// the licence of the Go distribution wasm_exec.js comes from.
type Runtime struct {
	Wasm, WasmExec, GoLicense []byte
}

// WriteSite writes the static site into dir, which any static host can
// serve: the page's files, config.json (the engine is the browser's
// WebAssembly), the scenario library as examples, and the runtime. The
// folder is replaced whole once the site is written, and only a folder
// that is a site already (or empty) is replaced.
func WriteSite(dir string, rt Runtime) error {
	if len(rt.Wasm) == 0 || len(rt.WasmExec) == 0 {
		return errors.New("web: the site needs herdlab.wasm and wasm_exec.js")
	}
	if err := replaceable(dir); err != nil {
		return err
	}
	tmp := dir + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.CopyFS(tmp, App()); err != nil {
		return err
	}
	list, err := examples()
	if err != nil {
		return err
	}
	config, err := json.MarshalIndent(Config{Engine: "wasm"}, "", "  ")
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"config.json":           config,
		"herdlab.wasm":          rt.Wasm,
		"wasm_exec.js":          rt.WasmExec,
		"wasm_exec.LICENSE.txt": rt.GoLicense,
		"examples/index.json":   list,
	}
	names, err := fs.Glob(libraryFS(), "*.yaml")
	if err != nil {
		return err
	}
	for _, name := range names {
		src, _ := example(name)
		files["examples/"+name] = src
	}
	for name, data := range files {
		path := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// replaceable reports an error unless dir is missing, empty or a site
// that WriteSite wrote (it has config.json and herdlab.wasm).
func replaceable(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, name := range []string{"config.json", "herdlab.wasm"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("web: %s holds files and is not a site (no %s): name a new folder", dir, name)
		}
	}
	return nil
}
