// A .tflite file from its flatbuffer JSON: flatc (FLATC, else the one on PATH) with our
// TFLite schema (core/frontend/tflite/tflite_schema.fbs). The build makes the bundled
// TFLite example with it (build.mjs), and the tests the same file.
'use strict';
const { execFileSync } = require('child_process');
const path = require('path');

const tfliteSchema = path.join(__dirname, '..', 'core/frontend/tflite/tflite_schema.fbs');

// Writes OUT_DIR/<the JSON's base name>.tflite and returns its path.
function makeTflite(jsonPath, outDir) {
  execFileSync(process.env.FLATC || 'flatc', ['-b', '-o', outDir, tfliteSchema, jsonPath], { stdio: 'inherit' });
  return path.join(outDir, `${path.basename(jsonPath, '.json')}.tflite`);
}

// The playground's bundled TFLite example, the digits CNN in int8 (tools/make_digits_tflite.py).
const digitsInt8Json = path.join(__dirname, 'examples', 'digits_int8.json');

module.exports = { makeTflite, tfliteSchema, digitsInt8Json };
