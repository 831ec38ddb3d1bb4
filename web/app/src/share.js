// Shared links: a scenario travels in the URL's fragment as
// #s=<base64url of the deflate-raw of its YAML>&f=<its file name>, so the
// link is the whole scenario and no server keeps anything.

// shareHash returns the fragment (without "#") that carries yaml and file.
export async function shareHash(yaml, file) {
  const bytes = await pipe(new TextEncoder().encode(yaml), new CompressionStream("deflate-raw"));
  return `s=${toBase64url(bytes)}&f=${encodeURIComponent(file)}`;
}

// readHash returns the scenario a fragment carries, {yaml, file}, or null
// when it carries none; it throws when the fragment's s= is not one.
export async function readHash(hash) {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const s = params.get("s");
  if (s == null) return null;
  const bytes = await pipe(fromBase64url(s), new DecompressionStream("deflate-raw"));
  const yaml = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  return { yaml, file: params.get("f") || "shared.yaml" };
}

// pipe runs bytes through a compression or decompression stream.
async function pipe(bytes, transform) {
  const stream = new Blob([bytes]).stream().pipeThrough(transform);
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

function toBase64url(bytes) {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(s) {
  if (!/^[A-Za-z0-9_-]*$/.test(s)) throw new Error("not base64url");
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}
