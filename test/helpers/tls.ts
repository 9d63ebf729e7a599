// A throw-away TLS certificate for the tests: self-signed for 127.0.0.1 by openssl.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** Writes a certificate for 127.0.0.1 (self-signed, valid a day) and its key into `dir`: their paths. */
export function selfSignedCert(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  const subject = ['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'];
  const args = ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1'];
  execFileSync('openssl', [...args, ...subject], { stdio: 'ignore' });
  return { cert, key };
}
