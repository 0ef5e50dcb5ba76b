// The suite's own entry: `node --import tsx conformance/main.ts --target fixtures/target.json …`.
import { conformanceCommand } from './command.ts';

// `… | head` closes the pipe early: stop quietly instead of crashing on EPIPE.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
  throw err;
});

await conformanceCommand().parseAsync(process.argv);
