// build.mjs builds dist/ from src/ with esbuild: the page (index.html,
// app.js, app.css), the chart component alone (charts.js exposing the
// global HerdlabCharts, charts.css) for report.html, the engine's Web
// Worker (worker.js), and THIRD_PARTY_LICENSES.txt with the licence of
// every npm package in the bundles. The output is minified and the same
// for the same sources: dist/ is committed and embedded in the Go binary.
//
//	npm run build
import * as esbuild from "esbuild";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.dirname(fileURLToPath(import.meta.url));
const src = path.join(root, "src");
const dist = path.join(root, "dist");

const common = {
  absWorkingDir: root,
  bundle: true,
  minify: true,
  metafile: true,
  legalComments: "none", // the licences are in THIRD_PARTY_LICENSES.txt
  target: ["es2022"],
  logLevel: "warning",
};

const builds = [
  { entryPoints: { app: "src/app.js" }, format: "esm" },
  { entryPoints: { charts: "src/charts.js" }, format: "iife", globalName: "HerdlabCharts" },
  { entryPoints: { worker: "src/worker.js" }, format: "iife" },
  // style.css imports charts.css, so the page needs app.css alone.
  { entryPoints: { app: "src/style.css", charts: "src/charts.css" } },
];

fs.rmSync(dist, { recursive: true, force: true });
fs.mkdirSync(dist);

const inputs = new Set();
for (const b of builds) {
  const result = await esbuild.build({ ...common, ...b, outdir: dist });
  for (const file of Object.keys(result.metafile.inputs)) inputs.add(file);
}
fs.copyFileSync(path.join(src, "index.html"), path.join(dist, "index.html"));
fs.writeFileSync(path.join(dist, "THIRD_PARTY_LICENSES.txt"), licenses(inputs));

// licenses returns the text of THIRD_PARTY_LICENSES.txt: for each npm
// package that one of the bundles' input files (paths relative to root)
// comes from, its name, version and licence file, sorted by name.
function licenses(files) {
  const pkgs = new Map();
  for (const file of files) {
    const dir = packageDir(file);
    if (dir && !pkgs.has(dir)) pkgs.set(dir, JSON.parse(fs.readFileSync(path.join(root, dir, "package.json"), "utf8")));
  }
  const parts = [...pkgs].sort(([, a], [, b]) => (a.name < b.name ? -1 : 1)).map(([dir, pkg]) => {
    const name = fs.readdirSync(path.join(root, dir)).sort().find((f) => /^(licen[cs]e|copying)/i.test(f));
    if (!name) throw new Error(`${pkg.name}: no licence file in ${dir}`);
    const text = fs.readFileSync(path.join(root, dir, name), "utf8").trim();
    return `${pkg.name} ${pkg.version} (${pkg.license})\n\n${text}\n`;
  });
  const rule = "\n" + "-".repeat(72) + "\n\n";
  return "herdlab's browser app bundles these npm packages, under these licences.\n" + rule + parts.join(rule);
}

// packageDir returns the folder of the npm package that holds file (a
// path like node_modules/@scope/name/dist/index.js), or "" for a file
// of our own.
function packageDir(file) {
  const parts = file.split("/");
  const i = parts.lastIndexOf("node_modules");
  if (i < 0) return "";
  const n = parts[i + 1].startsWith("@") ? 2 : 1;
  return parts.slice(0, i + 1 + n).join("/");
}
