// A cycle check over the whole import graph, type-only edges included.
// import-x/no-cycle skips `import type` unconditionally, yet two modules that
// name each other's types still cannot be understood, moved or tested apart.
// The graph is built once per lint run from TypeScript's `preProcessFile`,
// which finds every import form (static, type-only, re-exports, import(),
// require()), and split into strongly connected components (Tarjan): an
// import whose target sits in its own file's component closes a cycle.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Rule } from 'eslint';
import ts from 'typescript';

const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)$/;
const SKIPPED_DIRS = new Set(['node_modules', 'results', 'assets', 'data']);

export interface ImportGraph {
  /** Each module's resolved relative imports, by absolute path. */
  edges: Map<string, string[]>;
  /** Each module's strongly connected component, as an index into `components`. */
  componentOf: Map<string, number>;
  /** The components of more than one module: the import cycles. */
  components: string[][];
  /** The text each module had when the graph was built. */
  texts: Map<string, string>;
}

function sourceFiles(dir: string, into: string[] = []): string[] {
  if (!existsSync(dir)) return into;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name)) sourceFiles(full, into);
    } else if (SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts')) into.push(full);
  }
  return into;
}

/** The file a relative specifier names, or undefined for a package or a file that does not exist. */
function resolveSpecifier(fromFile: string, specifier: string): string | undefined {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) return undefined;
  const base = path.resolve(path.dirname(fromFile), specifier);
  for (const candidate of [base, `${base}.ts`, path.join(base, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

/** Tarjan's strongly connected components, iterative so a deep chain cannot overflow the stack. */
function stronglyConnected(edges: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let next = 0;
  for (const start of edges.keys()) {
    if (index.has(start)) continue;
    const frames: { node: string; child: number }[] = [{ node: start, child: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (frames.length) {
      const frame = frames[frames.length - 1];
      const targets = edges.get(frame.node) ?? [];
      if (frame.child < targets.length) {
        const target = targets[frame.child++];
        if (!index.has(target)) {
          index.set(target, next);
          low.set(target, next++);
          stack.push(target);
          onStack.add(target);
          frames.push({ node: target, child: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(target)!));
        }
        continue;
      }
      frames.pop();
      if (frames.length) {
        const parent = frames[frames.length - 1].node;
        low.set(parent, Math.min(low.get(parent)!, low.get(frame.node)!));
      }
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        components.push(component);
      }
    }
  }
  return components;
}

/** The import graph of every source file under `roots` (absolute directories). */
export function buildImportGraph(roots: readonly string[]): ImportGraph {
  const edges = new Map<string, string[]>();
  const texts = new Map<string, string>();
  for (const file of roots.flatMap((root) => sourceFiles(root))) {
    const text = readFileSync(file, 'utf8');
    texts.set(file, text);
    const targets = ts.preProcessFile(text, true, true).importedFiles.map((f) => resolveSpecifier(file, f.fileName));
    edges.set(file, [...new Set(targets.filter((t): t is string => t !== undefined))]);
  }
  for (const targets of edges.values()) for (const t of targets) if (!edges.has(t)) edges.set(t, []);
  const components = stronglyConnected(edges).filter((c) => c.length > 1 || edges.get(c[0])!.includes(c[0]));
  const componentOf = new Map<string, number>();
  components.forEach((c, i) => c.forEach((file) => componentOf.set(file, i)));
  return { edges, componentOf, components, texts };
}

/** The shortest import path from `from` to `to` inside one component (breadth first), both ends included. */
export function pathWithin(graph: ImportGraph, from: string, to: string): string[] {
  const component = graph.componentOf.get(from);
  const previous = new Map<string, string | null>([[from, null]]);
  const queue = [from];
  while (queue.length) {
    const node = queue.shift()!;
    if (node === to) break;
    for (const target of graph.edges.get(node) ?? []) {
      if (previous.has(target) || graph.componentOf.get(target) !== component) continue;
      previous.set(target, node);
      queue.push(target);
    }
  }
  const route: string[] = [];
  for (let node: string | null | undefined = to; node != null; node = previous.get(node)) route.unshift(node);
  return route;
}

const graphs = new Map<string, ImportGraph>();

/**
 * The graph for `roots`, built once per lint run. It is built again when the
 * file being linted no longer reads as it did (an editor's session, or a
 * --fix that changed imports), so a long-lived process does not go stale.
 */
function graphFor(roots: readonly string[], file: string, text: string): ImportGraph {
  const key = roots.join('\0');
  let graph = graphs.get(key);
  const seen = graph?.texts.get(file);
  if (!graph || (seen !== undefined && seen !== text)) {
    graph = buildImportGraph(roots);
    graphs.set(key, graph);
  }
  return graph;
}

export const importCycles: Rule.RuleModule = {
  meta: {
    type: 'problem',
    docs: { description: 'Forbid imports that close a cycle, type-only imports included' },
    schema: [
      {
        type: 'object',
        properties: { roots: { type: 'array', items: { type: 'string' } } },
        additionalProperties: false,
      },
    ],
    messages: { cycle: 'import closes a cycle of {{count}} modules: {{route}}' },
  },
  create(context) {
    const roots: string[] = (context.options[0]?.roots ?? ['.']).map((r: string) => path.resolve(context.cwd, r));
    const file = path.resolve(context.filename);
    const graph = graphFor(roots, file, context.sourceCode.text);
    const component = graph.componentOf.get(file);
    if (component === undefined) return {};
    const check = (source: unknown, node: Rule.Node) => {
      if (typeof source !== 'string') return;
      const target = resolveSpecifier(file, source);
      if (target === undefined || graph.componentOf.get(target) !== component) return;
      const route = [file, ...pathWithin(graph, target, file)].map((f) => path.relative(context.cwd, f));
      context.report({ node, messageId: 'cycle', data: { count: String(graph.components[component].length), route: route.join(' -> ') } });
    };
    return {
      ImportDeclaration: (node) => check(node.source.value, node),
      ExportNamedDeclaration: (node) => node.source && check(node.source.value, node),
      ExportAllDeclaration: (node) => check(node.source.value, node),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node.source.value, node),
    };
  },
};

export default { rules: { 'import-cycles': importCycles } };
