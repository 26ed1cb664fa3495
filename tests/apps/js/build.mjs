// Bundles src/index.js as the `http-js` template's build.mjs does (esbuild,
// with build-tools' plugin, which leaves the WIT imports to the component);
// package.json's `build` script then makes the component with build-tools' `j2w`.
import { build } from 'esbuild';
import { SpinEsbuildPlugin } from '@spinframework/build-tools/plugins/esbuild/index.js';

await build({
  entryPoints: ['./src/index.js'],
  outfile: './build/bundle.js',
  bundle: true,
  format: 'esm',
  platform: 'browser',
  plugins: [await SpinEsbuildPlugin()],
  logLevel: 'error',
});
