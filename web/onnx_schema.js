// The ONNX protobuf schema for web/src/onnx_import.js: Debian's libonnx-dev onnx.proto
// (the file the native frontend's generated classes come from) parsed by protobufjs into
// a JSON descriptor, at build time (build.mjs bundles it) and in the node tests.
'use strict';
const fs = require('fs');
const protobuf = require('protobufjs');

const kDefaultProto = '/usr/include/onnx/onnx.proto';

function onnxDescriptor(protoPath = process.env.MICROTIR_ONNX_PROTO || kDefaultProto) {
  if (!fs.existsSync(protoPath)) throw new Error(`${protoPath} is missing: install libonnx-dev (scripts/install-deps.sh)`);
  // keepCase: the field names of onnx.proto (raw_data, op_type), as the converter reads them.
  return protobuf.parse(fs.readFileSync(protoPath, 'utf8'), { keepCase: true }).root.toJSON();
}

module.exports = { onnxDescriptor };
