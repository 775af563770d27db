import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as ts from 'typescript';
import { PROBLEM_CODES } from '../../../config/problems';

/**
 * Finds the problem codes a source file names where the compiler cannot check
 * them against config/problems.ts: a hand-written `type` URI, a comparison on
 * a parsed body, a list of codes of its own.
 */

export const TYPE_PREFIX = 'urn:longhaul:problem:';
export const KNOWN: ReadonlySet<string> = new Set(PROBLEM_CODES);

export interface Use {
  readonly file: string;
  readonly line: number;
  readonly code: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

const textOf = (node: ts.Node): string | undefined =>
  ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) ? node.text : undefined;

const KEBAB = /^[a-z]+(?:-[a-z]+)*$/;

/** The literal members of a list, a record's keys or a union of literal types. */
function members(node: ts.Node): ts.Node[] {
  if (ts.isArrayLiteralExpression(node)) return [...node.elements];
  if (ts.isObjectLiteralExpression(node)) return node.properties.flatMap((p) => (p.name ? [p.name] : []));
  if (ts.isUnionTypeNode(node)) {
    return node.types.flatMap((t) => (ts.isLiteralTypeNode(t) ? [t.literal] : []));
  }
  return [];
}

const isProblemCodeAccess = (node: ts.Node): boolean =>
  (ts.isPropertyAccessExpression(node) || ts.isPropertyAccessChain(node)) &&
  node.name.text === 'code' &&
  /problem/i.test(node.expression.getText());

/**
 * The problem codes `source` names, wherever it names one: the first argument
 * of `problem(…)`, a `type` URI, a comparison with a problem's `code`, the
 * `code` of a hand-written problem document (the SDK's own, typed
 * `about:blank`, have codes of their own), and every
 * member of a list, record or union that names two codes of the table or more
 * (a list of codes of its own).
 */
export function problemCodesIn(file: string, source: string): Use[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const uses: Use[] = [];
  const use = (node: ts.Node, code: string) =>
    uses.push({ file, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1, code });
  const visit = (node: ts.Node): void => {
    const text = textOf(node);
    if (text?.includes(TYPE_PREFIX)) {
      const code = /^[a-z-]*/.exec(text.slice(text.indexOf(TYPE_PREFIX) + TYPE_PREFIX.length))?.[0];
      if (code) use(node, code);
    }
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'problem') {
      const first = node.arguments[0] && textOf(node.arguments[0]);
      if (first !== undefined) use(node, first);
    }
    if (
      ts.isBinaryExpression(node) &&
      [ts.SyntaxKind.EqualsEqualsEqualsToken, ts.SyntaxKind.ExclamationEqualsEqualsToken].includes(
        node.operatorToken.kind,
      )
    ) {
      for (const [side, other] of [
        [node.left, node.right],
        [node.right, node.left],
      ] as const) {
        const code = textOf(other);
        if (code !== undefined && isProblemCodeAccess(side)) use(other, code);
      }
    }
    if (ts.isObjectLiteralExpression(node)) {
      const names = new Set(
        node.properties.flatMap((p) => (p.name && ts.isIdentifier(p.name) ? [p.name.text] : [])),
      );
      const code = node.properties.find(
        (p): p is ts.PropertyAssignment =>
          ts.isPropertyAssignment(p) && ts.isIdentifier(p.name) && p.name.text === 'code',
      );
      const codeText = code && textOf(code.initializer);
      const type = node.properties.find(
        (p): p is ts.PropertyAssignment =>
          ts.isPropertyAssignment(p) && ts.isIdentifier(p.name) && p.name.text === 'type',
      );
      const untyped = type !== undefined && textOf(type.initializer) === 'about:blank';
      if (code && codeText !== undefined && names.has('title') && names.has('status') && !untyped) {
        use(code, codeText);
      }
    }
    const listed = members(node).flatMap((member) => {
      const name = ts.isIdentifier(member) ? member.text : textOf(member);
      return name !== undefined && KEBAB.test(name) ? [{ member, name }] : [];
    });
    if (listed.filter(({ name }) => KNOWN.has(name)).length >= 2) {
      for (const { member, name } of listed) use(member, name);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return uses;
}

/** Every use of a problem code in the TypeScript files under `dirs` of `root`, by path from `root`. */
export function problemCodesUnder(root: string, dirs: readonly string[]): Use[] {
  return dirs.flatMap((dir) =>
    sourceFiles(join(root, dir)).flatMap((path) =>
      problemCodesIn(relative(root, path), readFileSync(path, 'utf8')),
    ),
  );
}
