#!/usr/bin/env node
// The `parley` executable: runs the TypeScript CLI through tsx (no build step).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
