// Each name of core's root is marked `@public` where it is declared, and each name of
// `@exactly/core/internal` `@internal`: the API reference shows the first and leaves out the
// second (typedoc.json, `excludeInternal`), so a name added to either entry says which it is,
// and no name is in both.
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const entry = (name: string) => fileURLToPath(new URL(`../src/${name}.ts`, import.meta.url));
const root = entry("index");
const internal = entry("internal");

const program = ts.createProgram([root, internal], {
  allowImportingTsExtensions: true,
  noEmit: true,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2023,
});
const checker = program.getTypeChecker();

/** Each name `file` exports, with the tags of its declaration's doc comment. */
function exportsOf(file: string): Map<string, string[]> {
  const source = program.getSourceFile(file);
  const module = source && checker.getSymbolAtLocation(source);
  if (!module) throw new Error(`${file} is not a module`);
  const names = new Map<string, string[]>();
  for (const symbol of checker.getExportsOfModule(module)) {
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    names.set(
      symbol.name,
      target.getJsDocTags(checker).map((tag) => tag.name),
    );
  }
  return names;
}

describe("core's entries", () => {
  const rootNames = exportsOf(root);
  const internalNames = exportsOf(internal);

  it("marks every name of the root @public", () => {
    const unmarked = [...rootNames].filter(([, tags]) => !tags.includes("public")).map(([name]) => name);
    expect(unmarked).toEqual([]);
  });

  it("marks every name of @exactly/core/internal @internal", () => {
    const unmarked = [...internalNames].filter(([, tags]) => !tags.includes("internal")).map(([name]) => name);
    expect(unmarked).toEqual([]);
  });

  it("exports no name from both", () => {
    expect([...rootNames.keys()].filter((name) => internalNames.has(name))).toEqual([]);
  });
});
