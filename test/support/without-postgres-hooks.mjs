// The resolve hook of without-postgres.mjs: `postgres` (and any file of it) is not found, with the
// error Node gives for a package that is not installed.
export async function resolve(specifier, context, next) {
  if (specifier === 'postgres' || specifier.startsWith('postgres/')) {
    const err = new Error(`Cannot find package '${specifier}' imported from ${context.parentURL}`);
    err.code = 'ERR_MODULE_NOT_FOUND';
    throw err;
  }
  return next(specifier, context);
}
