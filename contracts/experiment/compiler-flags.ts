/**
 * The checks user code is type-checked with, shared by the runner's check (typecheck.ts) and Monaco in the
 * browser (monaco-setup.ts), so that what passes in the editor passes on the runner. Only the plain flags
 * live here: target, module and resolution are enums of two different TypeScript builds, set by each side.
 */
export const USER_CODE_COMPILER_FLAGS = {
  strict: true,
  noEmit: true,
  isolatedModules: true,
  allowImportingTsExtensions: true,
  skipLibCheck: true,
  noFallthroughCasesInSwitch: true,
  /** No ambient @types: the sandbox has no Node and no DOM. */
  types: [] as string[],
} as const;
