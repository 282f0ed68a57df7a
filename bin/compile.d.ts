/** Types of bin/compile.js (plain JavaScript, so that `settle` compiles without tsx) for scripts/build.ts. */
export declare const RUNTIME_DIRS: string[];
export declare function runtimeSources(root: string): string[];
export declare function compiledSpecifier(specifier: string, fromDir: string): string | null;
export declare function compileModules(options: { root: string; outDir: string; files: string[] }): Promise<void>;
