// pg's password hashing (lib/crypto/utils.js: SCRAM-SHA-256 and MD5) on Node's own crypto, for the bundled
// CLI (bundle-cli.mjs puts it in place of pg's). pg uses Web Crypto, whose first use loads Node's WebCrypto
// layer and sends each step of the handshake through the thread pool: several ms of every connection a
// command makes. Same algorithms, same results (test/unit/cli/pg-node-crypto.test.ts compares them).
'use strict'
const crypto = require('node:crypto')

const digest = (name, data) => crypto.createHash(name.replace('-', '').toLowerCase()).update(data).digest()
const md5 = async (text) => crypto.createHash('md5').update(text, 'utf-8').digest('hex')

module.exports = {
  postgresMd5PasswordHash: async (user, password, salt) =>
    `md5${await md5(Buffer.concat([Buffer.from(await md5(password + user)), salt]))}`,
  randomBytes: (length) => crypto.randomBytes(length),
  deriveKey: async (password, salt, iterations) =>
    crypto.pbkdf2Sync(password, salt, iterations, 32, 'sha256'),
  sha256: async (data) => digest('sha256', data),
  hashByName: async (name, data) => digest(name, data),
  hmacSha256: async (key, message) => crypto.createHmac('sha256', Buffer.from(key)).update(message).digest(),
  md5,
}
