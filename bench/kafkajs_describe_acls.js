#!/usr/bin/env node
// Times kafkajs's admin.describeAcls (filter ANY) on an already connected client, for bench/acls.py.
//   node bench/kafkajs_describe_acls.js '{"brokers": [...], "sasl": {...}, "reps": 5}'
// Prints one JSON line: {"seconds": [...], "bindings": [...]} (bindings = ACLs returned per call).
'use strict'
const path = require('path')
const { Kafka, logLevel, AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes } =
  require(path.join(__dirname, '..', 'tests', 'js', 'node_modules', 'kafkajs'))

async function main () {
  const job = JSON.parse(process.argv[2])
  const kafka = new Kafka({ brokers: job.brokers, sasl: job.sasl, logLevel: logLevel.NOTHING, requestTimeout: 60000 })
  const admin = kafka.admin()
  await admin.connect()
  const filter = {
    resourceType: AclResourceTypes.ANY,
    resourcePatternType: ResourcePatternTypes.ANY,
    operation: AclOperationTypes.ANY,
    permissionType: AclPermissionTypes.ANY,
  }
  const seconds = []
  const bindings = []
  for (let i = 0; i < job.reps; i++) {
    const start = process.hrtime.bigint()
    const result = await admin.describeAcls(filter)
    const n = result.resources.reduce((sum, r) => sum + r.acls.length, 0)
    seconds.push(Number(process.hrtime.bigint() - start) / 1e9)
    bindings.push(n)
  }
  await admin.disconnect()
  process.stdout.write(JSON.stringify({ seconds, bindings }) + '\n')
}

main().catch(e => { process.stderr.write(String(e && e.stack || e) + '\n'); process.exit(1) })
