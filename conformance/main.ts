// The suite's own entry: `node --import tsx conformance/main.ts --target fixtures/target.json …`.
import { conformanceCommand } from './command.ts';

await conformanceCommand().parseAsync(process.argv);
