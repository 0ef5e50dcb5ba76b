// `node --import ./test/support/without-postgres.mjs …`: this process finds no `postgres` package, as
// where the optional dependency did not install (D-151), without touching node_modules.
import { register } from 'node:module';

register('./without-postgres-hooks.mjs', import.meta.url);
