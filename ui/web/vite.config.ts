import { defineConfig } from "vite";

// The bundle is committed (../dist) and embedded in the agent, so the build
// must be byte-for-byte reproducible from the sources and the lockfile:
// content-hashed names, no source maps with absolute paths, no inline
// scripts (the agent's Content-Security-Policy forbids them).
export default defineConfig({
  base: "./",
  build: {
    outDir: "../dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
});
