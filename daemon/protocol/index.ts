export * from './api';
export * from './config';
export * from './entities';
export * from './evaluation';
export * from './events';
export * from './evolution';
export * from './samples';
export * from './training';
