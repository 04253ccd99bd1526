#!/usr/bin/env node
// kafkajs as a command-line tool for the integration tests.
//
//   node client.js '{"brokers": ["127.0.0.1:9092"], "sasl": {"mechanism": "scram-sha-256",
//                    "username": "u", "password": "p"}, "action": "describeCluster"}'
//
// The job is JSON, on argv[2] or (if absent) stdin. Keys: brokers (required), sasl (optional:
// mechanism plain | scram-sha-256 | scram-sha-512, username, password), action, args (per action),
// timeouts {connection, authentication, request} in ms.
//
// Prints exactly one JSON line on stdout: {"ok": true, "result": ...} with exit code 0, or
// {"ok": false, "error": {"name", "message", "type", "code", "retriable", "cause"}} with exit code 1.
// Retries are 0 and timeouts short, so a refused connection fails fast instead of backing off.
'use strict'

const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')

const ACTIONS = {
  // Metadata (topics: []) as kafkajs's admin reports it: brokers, controller, cluster id.
  describeCluster: admin => admin.describeCluster(),
  // Metadata for all topics, plus the cluster view: what "connect and list metadata" means here.
  metadata: async admin => {
    const cluster = await admin.describeCluster()
    const topics = await admin.listTopics()
    return { ...cluster, topics }
  },
  listTopics: admin => admin.listTopics(),
  fetchTopicMetadata: (admin, args) => admin.fetchTopicMetadata({ topics: (args && args.topics) || [] }),
  // ACLs: args are kafkajs's own shapes, with numeric codes (resourceType 2 = TOPIC, 4 = CLUSTER,
  // resourcePatternType 3 = LITERAL, operation 8 = DESCRIBE, permissionType 3 = ALLOW, ...).
  createAcls: (admin, args) => admin.createAcls({ acl: args.acl }),
  // Topics: args.topics are kafkajs's ITopicConfig objects; returns true when created.
  createTopics: (admin, args) => admin.createTopics({ topics: args.topics, validateOnly: !!args.validateOnly }),
  deleteTopics: (admin, args) => admin.deleteTopics({ topics: args.topics }).then(() => true),
  describeAcls: (admin, args) => admin.describeAcls(args),
  deleteAcls: (admin, args) => admin.deleteAcls({ filters: args.filters }),
  // Configs: args are kafkajs's shapes with numeric resource types (2 = TOPIC, 4 = BROKER).
  describeConfigs: (admin, args) =>
    admin.describeConfigs({ resources: args.resources, includeSynonyms: !!args.includeSynonyms }),
  alterConfigs: (admin, args) => admin.alterConfigs({ resources: args.resources, validateOnly: !!args.validateOnly }),
  // Reassignments: args.topics are kafkajs's IPartitionReassignment (alter) or TopicPartitions (list, null: all).
  alterPartitionReassignments: (admin, args) =>
    admin.alterPartitionReassignments({ topics: args.topics }).then(() => true),
  listPartitionReassignments: (admin, args) =>
    admin.listPartitionReassignments({ topics: (args && args.topics) || null }),
}

function readJob () {
  const text = process.argv[2] !== undefined ? process.argv[2] : fs.readFileSync(0, 'utf8')
  return JSON.parse(text)
}

function describeError (e) {
  if (!e) return { name: 'Error', message: String(e) }
  const out = {
    name: e.name || (e.constructor && e.constructor.name) || 'Error',
    message: e.message || String(e),
  }
  if (e.type !== undefined) out.type = e.type
  if (e.code !== undefined) out.code = e.code
  if (e.retriable !== undefined) out.retriable = e.retriable
  // KafkaJSNumberOfRetriesExceeded and friends wrap the error that actually happened.
  const cause = e.originalError || e.cause
  if (cause && cause !== e) out.cause = describeError(cause)
  return out
}

function emit (obj, code) {
  process.stdout.write(JSON.stringify(obj) + '\n', () => process.exit(code))
}

async function main () {
  let job
  try {
    job = readJob()
  } catch (e) {
    return emit({ ok: false, error: { name: 'BadJob', message: `cannot parse the job: ${e.message}` } }, 2)
  }
  const action = ACTIONS[job.action || 'metadata']
  if (!action) {
    return emit({ ok: false, error: { name: 'BadJob', message: `unknown action ${job.action}` } }, 2)
  }
  const timeouts = job.timeouts || {}
  const config = {
    clientId: job.clientId || 'ksteward-kafkajs-test',
    brokers: job.brokers,
    ssl: false,
    connectionTimeout: timeouts.connection || 3000,
    authenticationTimeout: timeouts.authentication || 3000,
    requestTimeout: timeouts.request || 5000,
    enforceRequestTimeout: true,
    retry: { retries: job.retries !== undefined ? job.retries : 0, initialRetryTime: 100, maxRetryTime: 500 },
    logLevel: logLevel.NOTHING,
  }
  if (job.sasl) config.sasl = job.sasl
  const admin = new Kafka(config).admin()
  let result
  try {
    await admin.connect()
    result = await action(admin, job.args)
  } catch (e) {
    await admin.disconnect().catch(() => {})
    return emit({ ok: false, error: describeError(e) }, 1)
  }
  await admin.disconnect().catch(() => {})
  emit({ ok: true, result }, 0)
}

main().catch(e => emit({ ok: false, error: describeError(e) }, 3))
