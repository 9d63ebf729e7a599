export * from './api';
export * from './config';
export * from './entities';
export * from './events';
export * from './failures';
export * from './persistent';
export * from './samples';
export * from './training';
